"""A scripted LLM behind litellm's custom-provider hook, so tests run the real litellm path.

Usage (see the ``scripted_llm`` fixture in conftest.py)::

    scripted_llm.push('{"keywords": [...]}')          # next answer, as text
    scripted_llm.push(lambda messages: '{...}')        # computed from the prompt
    scripted_llm.push(litellm.APIConnectionError(...)) # an outage
    Memory(..., llm="scripted/test-model")

Every request's messages are kept in ``scripted_llm.requests``. With the queue empty the
``default`` callable answers (None: raise, so a test notices an unexpected call).

Embeddings (``litellm.embedding(model="scripted/...")``) come from ``scripted_llm.embedder``
(texts -> vectors; by default a deterministic hashed bag of words); inputs are kept in
``scripted_llm.embedding_inputs``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import deque
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from litellm import CustomLLM
from litellm.types.utils import EmbeddingResponse, ModelResponse

Answer = str | Exception | Callable[[list[dict[str, Any]]], str]


class ScriptedLLM(CustomLLM):
    provider = "scripted"

    def __init__(self) -> None:
        super().__init__()
        self.queue: deque[Answer] = deque()
        self.requests: list[list[dict[str, Any]]] = []
        self.default: Callable[[list[dict[str, Any]]], str] | None = None
        self.embedder: Callable[[list[str]], list[list[float]]] = bag_of_words
        self.embedding_inputs: list[list[str]] = []

    def push(self, *answers: Answer) -> None:
        self.queue.extend(answers)

    def _answer(self, messages: list[dict[str, Any]]) -> str:
        self.requests.append(messages)
        if self.queue:
            answer = self.queue.popleft()
        elif self.default is not None:
            answer = self.default
        else:
            raise AssertionError("the scripted LLM was called with no answer queued")
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            answer = answer(messages)
        return answer

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        text = self._answer(messages)
        # The answer as a provider would send it (no second trip through litellm: the scripted model
        # is meant to cost nothing); the usage is counted with litellm's own (bundled, offline)
        # tokenizer so token figures mean something.
        prompt = litellm.token_counter(model="gpt-4o-mini", messages=messages)
        completion = litellm.token_counter(model="gpt-4o-mini", text=text, count_response_tokens=True)
        return ModelResponse(
            model=model,
            choices=[
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
            ],
            usage=litellm.Usage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            ),
        )

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.completion(model, messages)

    def embedding(
        self, model: str, input: list, model_response: EmbeddingResponse, *args: Any, **kwargs: Any
    ) -> EmbeddingResponse:
        texts = [str(text) for text in input]
        self.embedding_inputs.append(texts)
        vectors = self.embedder(texts)
        model_response.model = model
        model_response.data = [
            {"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)
        ]
        tokens = sum(len(text.split()) for text in texts)
        model_response.usage = litellm.Usage(prompt_tokens=tokens, completion_tokens=0, total_tokens=tokens)
        return model_response


def bag_of_words(texts: list[str], dimensions: int = 64) -> list[list[float]]:
    """A deterministic stand-in for an embedding model: each word adds 1 to a hashed dimension."""
    vectors = []
    for text in texts:
        vector = [0.0] * dimensions
        for word in re.findall(r"\w+", text.lower()):
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimensions] += 1.0
        vectors.append(vector if any(vector) else [1.0] + [0.0] * (dimensions - 1))
    return vectors


def install() -> ScriptedLLM:
    handler = ScriptedLLM()
    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != ScriptedLLM.provider],
        {"provider": ScriptedLLM.provider, "custom_handler": handler},
    ]
    return handler


def uninstall() -> None:
    litellm.custom_provider_map = [
        p for p in litellm.custom_provider_map if p.get("provider") != ScriptedLLM.provider
    ]
