"""What can go wrong when agentdebug asks a model, each error saying what to do next.

Strategies catch :class:`LLMError` to fall back to the free tier (and say so in the
report); the CLI prints ``str(error)`` as one line.
"""

from __future__ import annotations

from agentdebug.errors import AgentDebugError
from agentdebug.text import shorten


class LLMError(AgentDebugError):
    """Base class for every model-call failure."""


class NoModelConfigured(LLMError):
    """A model-based strategy was asked for, but no model is set."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "no model configured: pass --model (and --base-url for a local server), "
            "set AGENTDEBUG_MODEL (and AGENTDEBUG_BASE_URL), or run "
            "`agentdebug config set model NAME`"
        )


class LLMCallFailed(LLMError):
    """The server did not answer usefully, retries included.

    ``attempts`` counts the requests sent for this answer, ``status`` is the HTTP
    status of the last failure (None for timeouts and connection errors) and
    ``reason`` the server's own error message where it sent one.
    """

    def __init__(self, reason: str, *, attempts: int, status: int | None = None) -> None:
        self.reason = reason
        self.attempts = attempts
        self.status = status
        where = f"HTTP {status}: " if status is not None else ""
        plural = "s" if attempts != 1 else ""
        super().__init__(f"model call failed after {attempts} attempt{plural} ({where}{reason})")


class MalformedAnswer(LLMError):
    """The model answered, but not with what the schema asks, even after a repair round.

    ``raw`` is the last answer's text, ``problem`` what was wrong with it.
    """

    def __init__(self, problem: str, *, raw: str) -> None:
        self.problem = problem
        self.raw = raw
        super().__init__(f"the model's answer does not match the requested schema: {problem}")


class ModelRefused(LLMError):
    """The model declined to answer: its ``refusal`` (OpenAI's field for a refused
    request), or the server's content filter stopped the answer (finish reason
    ``content_filter``). Asking again in the same words would not change it, so
    no repair round is sent for it.

    ``refusal`` is the model's own words (None when a filter stopped it),
    ``finish_reason`` the server's.
    """

    def __init__(self, refusal: str | None, *, finish_reason: str | None = None) -> None:
        self.refusal = refusal
        self.finish_reason = finish_reason
        if refusal:
            text = f"the model refused to answer: {shorten(refusal, 300)}"
        else:
            text = "the server's content filter stopped the model's answer"
        super().__init__(text)


class BudgetExceeded(LLMError):
    """A request was refused before sending because it would overrun ``--budget``.

    ``kind`` is "calls" or "tokens"; ``spent`` and ``limit`` are in that unit;
    ``needed`` is what the refused request would have added (1 call, or its
    estimated prompt tokens).
    """

    def __init__(self, *, kind: str, spent: int, limit: int, needed: int = 0) -> None:
        self.kind = kind
        self.spent = spent
        self.limit = limit
        self.needed = needed
        if kind == "calls":
            text = f"model-call budget spent ({spent} of {limit} calls)"
        else:
            text = (
                f"token budget would be exceeded ({spent} of {limit} tokens spent, "
                f"the next request needs about {needed})"
            )
        super().__init__(text)


class PromptError(LLMError):
    """A prompt template that is missing or cannot be filled."""
