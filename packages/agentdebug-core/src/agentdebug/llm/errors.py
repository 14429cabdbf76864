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
    ``reason`` the server's own error message where it sent one. ``model`` and
    ``base_url`` say which endpoint was asked, ``hint`` what to check.
    """

    def __init__(
        self,
        reason: str,
        *,
        attempts: int,
        status: int | None = None,
        model: str | None = None,
        base_url: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.attempts = attempts
        self.status = status
        self.model = model
        self.base_url = base_url
        self.hint = hint
        where = f"HTTP {status}: " if status is not None else ""
        plural = "s" if attempts != 1 else ""
        to = ""
        if model:
            to += f" to model '{model}'"
        if base_url:
            to += f" at {base_url}"
        text = f"model call{to} failed after {attempts} attempt{plural} ({where}{reason})"
        if not attempts:  # (held back: see agentdebug.llm.held)
            text = f"model call{to} {reason}"
        super().__init__(f"{text}; {hint}" if hint else text)

    @property
    def fatal(self) -> bool:
        """Whether every later request to this endpoint would fail the same way: a
        rejected key (401), a forbidden account (403) or a wrong URL or model (404)."""
        return self.status in FATAL_STATUSES


#: Statuses that say the configuration is wrong, not the request: asking again,
#: or asking anything else of the same endpoint, cannot succeed.
FATAL_STATUSES = frozenset({401, 403, 404})


class MalformedAnswer(LLMError):
    """The model answered, but not with what the schema asks, even after a repair round.

    ``raw`` is the last answer's text, ``problem`` what was wrong with it.
    """

    def __init__(
        self, problem: str, *, raw: str, model: str | None = None, base_url: str | None = None
    ) -> None:
        self.problem = problem
        self.raw = raw
        whose = f" (model '{model}' at {base_url})" if model and base_url else ""
        super().__init__(
            f"the model's answer{whose} does not match the requested schema: {problem}"
        )


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

    def __init__(
        self, *, kind: str, spent: int, limit: int, needed: int = 0, after: str | None = None
    ) -> None:
        self.kind = kind
        self.spent = spent
        self.limit = limit
        self.needed = needed
        self.after = after
        if kind == "calls":
            text = f"model-call budget spent ({spent} of {limit} calls)"
        else:
            text = (
                f"token budget would be exceeded ({spent} of {limit} tokens spent, "
                f"the next request needs about {needed})"
            )
        if after:
            # The budget only stopped the retries; the server's failure is the news.
            text = f"{after}; retries stopped by the budget: {text}"
        super().__init__(text)

    def after_failure(self, failure: str) -> BudgetExceeded:
        """The same refusal, said as what stopped the retries of ``failure``."""
        return BudgetExceeded(
            kind=self.kind, spent=self.spent, limit=self.limit, needed=self.needed, after=failure
        )


class PromptError(LLMError):
    """A prompt template that is missing or cannot be filled."""
