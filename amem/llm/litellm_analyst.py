"""The analyst backed by any litellm model string (openai/..., anthropic/..., ollama/..., scripted/...).

Each task is one completion; an answer that is not valid JSON of the task's model is sent back to
the model with what was wrong, up to ``max_attempts`` times. Every attempt is an LlmCall, so the
ledger shows failed attempts too. A transient provider failure (a timeout, 429, a 5xx) is retried
with exponential backoff, ``transient_retries`` times, and those are the only retries (the provider
SDK's own are off: OpenAI's client would retry twice inside one recorded attempt), so every request
a provider sees is an LlmCall; any other provider failure (an outage, a bad
key), or a transient one that persists, ends the task with AnalystError: the raw log is already
kept, marked failed, and `amem reprocess` retries later.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from amem.domain.models import LlmCall, Note, RawLog, Usage, new_id, utcnow
from amem.domain.text import storable
from amem.llm import construct_note, link_evolve
from amem.llm.base import AnalystError, TaskResult
from amem.llm.json_answer import InvalidAnswer, prompt_sha256
from amem.policy import AttributePolicy

A = TypeVar("A", bound=BaseModel)

Messages = list[dict[str, str]]

#: The part of a bad answer echoed back to the model when asking again.
_ECHO_CHARS = 4000


class _ProviderFailure(Exception):
    def __init__(self, call: LlmCall, cause: Exception) -> None:
        super().__init__(str(cause))
        self.call = call
        self.cause = cause


class LiteLLMAnalyst:
    #: Calls wait on the provider, so add_notes runs several at once (AMEM_LLM_CONCURRENCY).
    concurrent = True
    checked = True

    def __init__(
        self,
        model: str,
        *,
        max_attempts: int = 3,
        temperature: float = 0,
        timeout: float = 60,
        transient_retries: int = 4,
        retry_wait: float = 1.0,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("a litellm model string is needed, e.g. openai/gpt-4o-mini")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._model = model.strip()
        self.max_attempts = max_attempts
        self.temperature = temperature
        self.timeout = timeout
        self.transient_retries = max(0, transient_retries)
        self.retry_wait = max(0.0, retry_wait)
        self._json_mode: bool | None = None

    @property
    def model(self) -> str:
        return self._model

    # -- the two tasks -------------------------------------------------------------------------

    def construct(
        self, raw_log: RawLog, declared: Mapping[str, AttributePolicy]
    ) -> TaskResult[construct_note.ConstructedNote]:
        return self._run(
            task=construct_note.TASK,
            prompt_version=construct_note.PROMPT_VERSION,
            messages=construct_note.build_messages(raw_log, declared),
            parse=lambda text: construct_note.parse_answer(text, declared),
            raw_log_id=raw_log.id,
        )

    def link_and_evolve(
        self,
        note: Note,
        raw_log: RawLog,
        neighbours: Sequence[Note],
        said: Mapping[str, datetime] | None = None,
    ) -> TaskResult[link_evolve.LinkEvolveAnswer]:
        source = f"{link_evolve.TASK} for raw log {raw_log.id}"
        return self._run(
            task=link_evolve.TASK,
            prompt_version=link_evolve.PROMPT_VERSION,
            messages=link_evolve.build_messages(note, raw_log, neighbours, said),
            parse=lambda text: link_evolve.parse_answer(text, neighbours, source),
            raw_log_id=raw_log.id,
        )

    # -- one task, with retries ------------------------------------------------------------------

    def _run(
        self,
        *,
        task: str,
        prompt_version: str,
        messages: Messages,
        parse: Callable[[str | None], A],
        raw_log_id: str | None,
    ) -> TaskResult[A]:
        calls: list[LlmCall] = []
        conversation = list(messages)
        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            retry=retry_if_exception_type(InvalidAnswer),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    text, call = self._complete_retrying(
                        task, prompt_version, conversation, raw_log_id, calls
                    )
                    try:
                        answer = parse(text)
                    except InvalidAnswer as exc:
                        calls.append(call.model_copy(update={"error": f"invalid answer: {exc}"}))
                        conversation = [*conversation, *_ask_again(text, exc)]
                        raise
                    calls.append(call)
        except InvalidAnswer as exc:
            raise AnalystError(
                f"{task}: {self.model} gave no valid answer in {len(calls)} attempts (last: {exc})", calls
            ) from exc
        except _ProviderFailure as failure:
            calls.append(failure.call)
            missing = missing_credentials(failure.cause, self.model)
            if missing:
                raise AnalystError(
                    f"{task}: {self.model} has no credentials: set {' and '.join(missing)} in the "
                    f"environment, then `amem reprocess` analyses the inputs kept meanwhile "
                    f"({failure.cause})",
                    calls,
                ) from failure.cause
            tries = f" ({self.transient_retries + 1} tries)" if is_transient(failure.cause) else ""
            raise AnalystError(
                f"{task}: {self.model} failed{tries}: {failure.cause}", calls
            ) from failure.cause
        usage = Usage(
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            latency_ms=round(sum(c.latency_ms for c in calls), 3),
        )
        return TaskResult(
            answer=answer,
            call=calls[-1],
            usage=usage,
            model=self.model,
            prompt_version=prompt_version,
            attempts=calls,
        )

    def _complete_retrying(
        self, task: str, prompt_version: str, messages: Messages, raw_log_id: str | None, calls: list[LlmCall]
    ) -> tuple[str | None, LlmCall]:
        """``_complete``, retried with backoff while the provider fails transiently; each failed
        attempt is added to ``calls`` (the last one travels in the _ProviderFailure raised)."""

        def keep_failed(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome else None
            if isinstance(failure, _ProviderFailure):
                calls.append(failure.call)

        retrying = Retrying(
            stop=stop_after_attempt(self.transient_retries + 1),
            wait=wait_exponential(multiplier=self.retry_wait, max=30),
            retry=retry_if_exception(
                lambda e: (
                    isinstance(e, _ProviderFailure)
                    and is_transient(e.cause)
                    and not missing_credentials(e.cause, self.model)
                )
            ),
            before_sleep=keep_failed,
            reraise=True,
        )
        return retrying(self._complete, task, prompt_version, messages, raw_log_id)

    def _complete(
        self, task: str, prompt_version: str, messages: Messages, raw_log_id: str | None
    ) -> tuple[str | None, LlmCall]:
        """One completion; a provider failure raises _ProviderFailure carrying its LlmCall."""
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        kwargs: dict[str, Any] = {}
        if self._supports_json_mode(litellm):
            kwargs["response_format"] = {"type": "json_object"}
        record = {
            "id": new_id("llm"),
            "task": task,
            "model": self.model,
            "prompt_version": prompt_version,
            "raw_log_id": raw_log_id,
            "prompt_sha256": prompt_sha256(messages),
            "created_at": utcnow(),
        }
        started = time.perf_counter()
        try:
            response = litellm.completion(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                timeout=self.timeout,
                drop_params=True,
                # the provider SDK's own retries (OpenAI's: 2) would be requests no LlmCall records,
                # each with its own timeout: amem's retries (each one recorded) are the only ones
                max_retries=0,
                **kwargs,
            )
        except Exception as exc:  # every provider failure reaches us as some litellm/openai error
            latency = (time.perf_counter() - started) * 1000
            error = f"{type(exc).__name__}: {exc}"[:2000]
            raise _ProviderFailure(LlmCall(**record, latency_ms=latency, error=error), exc) from exc
        latency = (time.perf_counter() - started) * 1000
        text = _content(response)
        usage = getattr(response, "usage", None)
        call = LlmCall(
            **record,
            response_text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_ms=latency,
            served_model=self._served(response),
        )
        return text, call

    def _served(self, response: Any) -> str | None:
        """The model the provider says answered, where it names another than the one asked for (an
        alias served by a dated snapshot: ``gpt-4o`` by ``gpt-4o-2024-08-06``), so the record says
        which one wrote the answer. litellm gives the name without its provider prefix."""
        served = getattr(response, "model", None)
        if not isinstance(served, str) or not served.strip():
            return None
        served = served.strip()[:200]
        return None if served in (self.model, self.model.split("/", 1)[-1]) else served

    def _supports_json_mode(self, litellm: Any) -> bool:
        """JSON mode only where litellm says the provider takes response_format."""
        if self._json_mode is None:
            try:
                model, provider, _, _ = litellm.get_llm_provider(self.model)
                params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
                self._json_mode = bool(params) and "response_format" in params
            except Exception:  # unknown to litellm's tables: rely on the prompt and validation
                self._json_mode = False
        return self._json_mode


def is_transient(exc: BaseException) -> bool:
    """A provider failure worth waiting out: a timeout, a rate limit (429), a server error (5xx).
    litellm maps only some statuses to their own class and raises a generic APIError for the
    others (520, 522, 524 from a proxy, Anthropic's 529 "overloaded"), so the status the server
    sent decides too; 501 (not implemented) answers the same however often it is asked. A
    connection that failed got no status (litellm labels it 500): an outage, not retried."""
    import litellm

    transient = (
        litellm.Timeout,
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )
    if isinstance(exc, transient):
        return True
    if isinstance(exc, litellm.APIConnectionError):
        return False
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and 500 <= status <= 599 and status != 501


#: How providers' SDKs word a request made with no key (OpenAI's client: "Missing credentials").
_NO_KEY_WORDS = ("credential", "api key", "api_key", "apikey")


def missing_credentials(exc: BaseException, model: str) -> list[str]:
    """The environment variables ``model`` needs and lacks, when ``exc`` says a key is missing: a
    request made with no key fails the same way however often it is tried, though litellm reports
    OpenAI's as a server error (5xx, otherwise retried). Both signs are needed: litellm names
    variables some providers can do without (Ollama's base URL, AWS keys beside an IAM role)."""
    if not any(word in str(exc).lower() for word in _NO_KEY_WORDS):
        return []
    import litellm

    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:  # a provider litellm cannot check: not a diagnosis it can make
        return []
    return [str(key) for key in missing]


def _content(response: Any) -> str | None:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _ask_again(bad_answer: str | None, problem: InvalidAnswer) -> Messages:
    # Echoed as text the next prompt can carry (a NUL or lone surrogate escaped, as it is recorded).
    echoed = storable((bad_answer or "")[:_ECHO_CHARS]) or "(empty)"
    return [
        {"role": "assistant", "content": echoed},
        {
            "role": "user",
            "content": (
                f"That answer was not valid: {storable(str(problem))}. Reply again with one JSON object "
                "in exactly the format described, with no other text and no other fields."
            ),
        },
    ]
