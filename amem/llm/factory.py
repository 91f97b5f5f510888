"""Which analyst a Memory uses: a litellm model when one is configured, else the offline one."""

from __future__ import annotations

from amem.config import Settings
from amem.llm.base import Analyst
from amem.policy import Policy

#: The value of AMEM_LLM_MODEL / --llm that asks for the offline analyst explicitly.
OFFLINE = "offline"


def make_analyst(settings: Settings, policy: Policy | None = None) -> Analyst:
    """``settings.llm_model`` (any litellm string: openai/..., ollama/..., scripted/...) or offline.

    The policy is accepted for symmetry with the other factories; the analyst receives the
    declared attributes per call, so a policy reload needs no new analyst.
    """
    model = (settings.llm_model or "").strip()
    if not model or model.lower() == OFFLINE:
        from amem.llm.offline import OfflineAnalyst

        return OfflineAnalyst(link_k=settings.link_k)
    from amem.llm.litellm_analyst import LiteLLMAnalyst

    return LiteLLMAnalyst(
        model, transient_retries=settings.llm_transient_retries, retry_wait=settings.llm_retry_wait
    )
