"""The model endpoint playtests talk to: any OpenAI-compatible chat completions API, through
the ``openai`` client (which retries timeouts, 429 and 5xx answers, honouring Retry-After),
as the summarizer does (:class:`assembler.summarize.OpenAISummarizer`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

OFF = (
    "Playtests are off: set PLAYTEST_BASE_URL to an OpenAI-compatible endpoint "
    "(e.g. https://api.openai.com/v1) and PLAYTEST_MODEL, with PLAYTEST_API_KEY or "
    "PLAYTEST_API_KEY_FILE, then restart."
)


def enabled() -> bool:
    return bool(settings.PLAYTEST_BASE_URL)


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    tokens_in: int
    tokens_out: int
    latency_ms: int


class CallFailed(Exception):
    """The endpoint gave no usable answer (after the client's retries); says why in a line."""


class Endpoint:
    """One client for a run's calls (thread-safe: the openai client shares a pool)."""

    def __init__(self) -> None:
        import openai  # slow to import; only playtests need it

        self.model = settings.PLAYTEST_MODEL
        self._client = openai.OpenAI(
            base_url=settings.PLAYTEST_BASE_URL,
            api_key=settings.PLAYTEST_API_KEY or "unused",
            timeout=settings.PLAYTEST_TIMEOUT,
            max_retries=settings.PLAYTEST_MAX_RETRIES,
        )

    def close(self) -> None:
        self._client.close()

    def _ask(
        self, messages: list[dict[str, str]], params: dict[str, Any], extra: dict[str, Any]
    ) -> Any:
        return self._client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            temperature=params["temperature"],
            max_tokens=params["max_tokens"],
            **extra,
        )

    def complete(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Answer:
        """The endpoint's reply to ``messages`` with ``params`` (temperature, max_tokens,
        and the seed when set and the endpoint takes one: one refused with a 400 naming
        the seed is asked again without it), or CallFailed."""
        import openai

        extra: dict[str, Any] = {}
        if params.get("seed") is not None:
            extra["seed"] = params["seed"]
        started = time.monotonic()
        try:
            try:
                response = self._ask(messages, params, extra)
            except openai.BadRequestError as error:
                if not extra or "seed" not in str(error.message).lower():
                    raise
                # An endpoint that takes no seed: asked again without one.
                started = time.monotonic()
                response = self._ask(messages, params, {})
        except openai.APITimeoutError:
            raise CallFailed(f"no answer within {settings.PLAYTEST_TIMEOUT}s") from None
        except openai.APIStatusError as error:
            raise CallFailed(
                f"the endpoint answered {error.status_code}: {error.message}"
            ) from None
        except openai.APIConnectionError as error:
            raise CallFailed(f"cannot reach the endpoint: {error}") from None
        except Exception as error:  # a malformed answer: not JSON, or not a completion
            raise CallFailed(f"unreadable answer: {type(error).__name__}: {error}") from None
        latency = int((time.monotonic() - started) * 1000)
        choices = getattr(response, "choices", None)
        if not choices or choices[0].message is None:
            raise CallFailed("unreadable answer: no choices")
        text = choices[0].message.content
        if not isinstance(text, str):
            raise CallFailed("unreadable answer: no text in the first choice")
        usage = getattr(response, "usage", None)
        return Answer(
            text=text,
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_ms=latency,
        )
