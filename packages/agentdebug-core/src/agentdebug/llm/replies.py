"""Reading what an OpenAI-compatible server sent back: a chat completion, or an
error said in one of the many shapes servers use.

Kept apart from the client so that :mod:`agentdebug.llm.client` holds the request
loop (forms, retries, budget, audit) and this module what each reply means.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentdebug.errors import ConfigError
from agentdebug.llm.errors import ModelRefused
from agentdebug.text import shorten

if TYPE_CHECKING:
    import openai


@dataclass
class Answer:
    """One HTTP 200 with a readable chat completion.

    ``estimated`` is True when the server reported no ``usage`` and the token
    counts are the client's own count of the prompt and the answer.
    """

    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    latency_ms: float
    key: str
    refusal: str | None = None  # the model's words when it declined to answer
    estimated: bool = False

    def refused(self) -> ModelRefused | None:
        """The error to raise when this is a refusal, not an answer: no text, and
        the model's ``refusal`` or the server's content filter instead."""
        if self.text.strip() or not (self.refusal or self.finish_reason == "content_filter"):
            return None
        return ModelRefused(self.refusal, finish_reason=self.finish_reason)


class BadBody(Exception):
    """A 200 response that is not a chat completion; ``lasting``: one a retry will
    not change (why, said as a hint)."""

    def __init__(self, message: str, lasting: str | None = None) -> None:
        super().__init__(message)
        self.lasting = lasting


def read_completion(completion: Any, key: str, latency_ms: float) -> Answer:
    """The answer in a chat completion, or BadBody saying why there is none."""
    if isinstance(completion, str | bytes):
        raise BadBody(
            "the server did not send JSON",
            lasting="a web page or other text is no chat completion, and a retry sends the "
            "same: check that the base URL is the API's (it ends in /v1, or the server's API "
            "path), not a web page's",
        )
    if isinstance(completion, list):  # (a JSON array: Hugging Face's generate API, say)
        raise BadBody(
            "the server answered with a JSON list, not a chat completion",
            lasting=f"{_OPENAI_PATH}, which serves /chat/completions",
        )
    error = _error_in_body(completion)
    if error is not None:
        # Some gateways (OpenRouter, LiteLLM proxies) send a failure with status 200.
        raise BadBody(f"the server sent an error with status 200: {error}")
    try:
        choice = completion.choices[0]
        content = choice.message.content
        refusal = getattr(choice.message, "refusal", None)
        finish_reason = getattr(choice, "finish_reason", None)
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        other = other_api(completion)
        if other is not None:  # the same request gets the same shape: not retried
            said, hint = other
            raise BadBody(
                f"the server answered {said}, not a chat completion", lasting=hint
            ) from None
        raise BadBody(f"no choices[0].message: {exc}") from None
    usage = getattr(completion, "usage", None)
    return Answer(
        text=content if isinstance(content, str) else ("" if content is None else str(content)),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        input_tokens=_count(getattr(usage, "prompt_tokens", 0)),
        output_tokens=_count(getattr(usage, "completion_tokens", 0)),
        latency_ms=latency_ms,
        key=key,
        refusal=refusal if isinstance(refusal, str) and refusal.strip() else None,
    )


_OPENAI_PATH = "point the base URL at the server's OpenAI-compatible API"


def other_api(completion: Any) -> tuple[str, str] | None:
    """A 200 whose JSON is another API's answer, which every retry gets again: what
    it is, and what to check. None for a body of no shape known here (a proxy's
    glitch may pass: it is retried)."""
    extra = getattr(completion, "model_extra", None)
    if not isinstance(extra, dict):
        return None
    kind = getattr(completion, "object", None) or extra.get("object")
    if extra.get("type") == "message" and isinstance(extra.get("content"), list):
        return (
            "in the Anthropic Messages format",
            f"{_OPENAI_PATH} (Anthropic's is https://api.anthropic.com/v1/), not its /v1/messages",
        )
    if isinstance(extra.get("message"), dict) and "done" in extra:
        return (
            "in Ollama's own format (/api/chat)",
            f"{_OPENAI_PATH}: Ollama's is http://HOST:11434/v1",
        )
    if isinstance(extra.get("candidates"), list):
        return (
            "in Gemini's generateContent format",
            f"{_OPENAI_PATH}: Gemini's is https://generativelanguage.googleapis.com/v1beta/openai/",
        )
    if kind == "response" or isinstance(extra.get("output"), list):
        return (
            "in the OpenAI Responses API's format",
            f"{_OPENAI_PATH}, which serves /chat/completions",
        )
    if kind == "list" or isinstance(extra.get("data"), list):
        return (
            "with a list of objects (as /models does)",
            "check the base URL: the client adds /chat/completions to it",
        )
    return None


def _error_in_body(completion: Any) -> str | None:
    extra = getattr(completion, "model_extra", None) or {}
    error = extra.get("error") if isinstance(extra, dict) else None
    if not error:
        return None
    message: Any = error.get("message") if isinstance(error, dict) else error
    return shorten(str(message or error), 300)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def retry_after_of(exc: openai.APIStatusError) -> float | None:
    """Seconds the server asks to wait (Retry-After-Ms or Retry-After), if it says."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words for an error, in one line."""
    body = exc.body
    if isinstance(body, dict):
        message: Any = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return shorten(str(message), 300)
    if isinstance(body, str) and body.strip():
        return shorten(body, 300)
    return shorten(exc.message, 300)


def quota_exhausted(exc: openai.APIStatusError) -> bool:
    """Whether a 429 says the account's quota is spent (OpenAI's
    ``insufficient_quota``), which waiting does not fix, unlike a rate limit."""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        fields = (error.get("code"), error.get("type"))
        if any(str(f).lower() == "insufficient_quota" for f in fields if f):
            return True
    return "insufficient_quota" in str(exc.message).lower()


def hint_for(status: int | None) -> str | None:
    """What to check for a failure that is about the configuration."""
    if status == 404:
        return "check that the base URL ends in /v1 (or the server's API path) and the model name"
    if status in (401, 403):
        return (
            "check the API key (--api-key, AGENTDEBUG_API_KEY or OPENAI_API_KEY, or api_key "
            "in [llm] of the config file: agentdebug config path)"
        )
    return None


def check_base_url(base_url: str | None) -> None:
    """ConfigError at once for a base URL with no http:// or https:// scheme, which
    would otherwise be retried as an unreachable server."""
    if base_url and not _SCHEME.match(base_url):
        raise ConfigError(
            f"base URL {base_url!r} has no scheme: write it as http://{base_url} (or https://...)"
        )


_SCHEME = re.compile(r"^https?://", re.I)
