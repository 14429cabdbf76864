"""The model client: one validated answer per question, every attempt audited.

:meth:`LLMClient.structured` sends a chat to any OpenAI-compatible server and
returns an instance of a pydantic model, or raises. Around the request it:

- answers from the response cache when the same request was answered before;
- checks the budget before each request (refused requests are never sent);
- picks the structured-output form the server accepts (json_schema, then
  json_object with a schema, then the schema in the prompt), and remembers it;
- retries 408/409/429/5xx, timeouts, connection errors and unreadable bodies with
  exponential backoff and jitter (honouring Retry-After), never other 4xx, nor a
  429 whose quota is gone or whose Retry-After is past the cap; a 401/403/404, or
  a server no attempt reached, makes later calls fail at once, unsent, for a while
  (:mod:`agentdebug.llm.held`);
- keeps to an open :func:`~agentdebug.llm.budget.deadline_scope`: each request's
  timeout is cut to the time left, a retry that would start past it is not
  waited for, and nothing is sent once it has passed (:class:`DeadlineExceeded`);
- repairs an answer that does not validate with one follow-up request, and raises
  :class:`MalformedAnswer` if that fails too; a refusal (the model's ``refusal``,
  or the server's content filter) raises :class:`ModelRefused` with no repair;
- records an :class:`AuditEntry` for every request and cache hit, with the token
  counts the server reported; when it reported none, the client's own count,
  marked as an estimate on the entry and in a report note (so a token budget
  still holds).
"""

from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from agentdebug.audit import _current, note, record
from agentdebug.llm import budget
from agentdebug.llm.answers import (
    FORMS,
    Form,
    echoed,
    json_schema_of,
    messages_for,
    parse_answer,
    repair_message,
    response_format,
    schema_name,
)
from agentdebug.llm.budget import DeadlineExceeded, NoTimeLeft, seconds_text
from agentdebug.llm.cache import ResponseCache, request_key
from agentdebug.llm.config import LLMSettings, current_settings
from agentdebug.llm.errors import (
    BudgetExceeded,
    LLMCallFailed,
    MalformedAnswer,
    NoModelConfigured,
)
from agentdebug.llm.held import Held, not_connected
from agentdebug.llm.replies import (
    Answer,
    BadBody,
    check_base_url,
    hint_for,
    quota_exhausted,
    read_completion,
    retry_after_of,
    server_message,
)
from agentdebug.schema import AuditEntry
from agentdebug.text import shorten
from agentdebug.tokens import count_tokens

if TYPE_CHECKING:
    pass

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger(__name__)

#: Backoff sleeping; tests replace it (``monkeypatch.setattr(client, "sleep", ...)``).
sleep: Callable[[float], None] = time.sleep
#: A number in [0, 1) that spreads retries out; replaceable for deterministic tests.
jitter: Callable[[], float] = random.random

BACKOFF_BASE = 0.5
BACKOFF_FACTOR = 2.0
BACKOFF_CAP = 20.0
#: A server's Retry-After is honoured up to this many seconds.
RETRY_AFTER_CAP = 60.0
#: Statuses retried as transient (besides every 5xx): timeout, conflict, rate limit.
RETRY_STATUSES = frozenset({408, 409, 429})
#: Statuses with which a server may reject a response_format it does not support,
#: when its message names the format (llama.cpp says so with a 500).
REJECTION_STATUSES = frozenset({400, 422, 500, 501})
#: A retry wait longer than this is said on stderr (the log), so a long silence
#: is never a mystery.
NOTICE_SECONDS = 5.0
#: Said on an audit entry whose token counts are the client's own.
ESTIMATED = "token counts estimated (the server reported no usage)"
#: The report's note when any are.
ESTIMATED_NOTE = (
    "the server reported no token usage: token counts (and the token budget) "
    "are agentdebug's own estimates"
)
_FORMAT_WORDS: tuple[str, ...] = ("response_format", "response format", "json_schema")
_FORMAT_WORDS += ("json schema", "json_object", "schema", "grammar")


@dataclass(frozen=True)
class Structured(Generic[T]):
    """A validated answer and what it cost.

    ``input_tokens``/``output_tokens`` sum the server-reported usage of every
    request made for this answer (for a cache hit: the usage recorded when it was
    made); ``attempts`` counts those requests (0 for a cache hit).
    """

    value: T
    raw: str
    input_tokens: int
    output_tokens: int
    cached: bool
    attempts: int


class _FormRejected(Exception):
    """The server refused this response_format; try the next form."""


@dataclass
class _Run:
    """Bookkeeping for one :meth:`LLMClient.structured` call."""

    strategy: str
    purpose: str
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # some token counts are the client's own estimate


def cache_path_for(settings: LLMSettings) -> Path:
    """``settings.cache_path``, else ``<AGENTDEBUG_HOME>/llm-cache.db``."""
    if settings.cache_path:
        return Path(settings.cache_path).expanduser()
    from agentdebug.store.base import default_home

    return default_home() / "llm-cache.db"


class LLMClient:
    """A client for one model on one OpenAI-compatible endpoint; thread-safe."""

    def __init__(self, settings: LLMSettings, *, cache: ResponseCache | None = None) -> None:
        if not settings.model:
            raise NoModelConfigured()
        check_base_url(settings.base_url)
        import openai

        self.settings = settings
        self.model: str = settings.model
        self._openai = openai.OpenAI(
            api_key=settings.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
        )
        self.base_url = str(self._openai.base_url).rstrip("/")
        self._slots = budget.shared_slots(self.base_url, self.model, settings.concurrency)
        if settings.cache and cache is None:
            cache = ResponseCache(cache_path_for(settings))
        self.cache = cache if settings.cache else None
        self._learned: Form | None = None
        self._held = Held()  # (a 401/403/404, or a server not reached: see held.py)

    @property
    def fatal(self) -> LLMCallFailed | None:
        """The error that stops calls now, unsent, if any (:mod:`agentdebug.llm.held`)."""
        return self._held.now()

    @property
    def response_form(self) -> Form | None:
        """The structured-output form this server accepted (None until one did)."""
        return self._learned

    def close(self) -> None:
        self._openai.close()
        if self.cache is not None:
            self.cache.close()

    # ----------------------------------------------------------------- public

    def structured(
        self,
        *,
        messages: list[dict[str, str]],
        schema: type[T],
        strategy: str,
        purpose: str = "",
    ) -> Structured[T]:
        """Ask for an answer shaped like ``schema``; return it validated, or raise
        LLMCallFailed, MalformedAnswer, ModelRefused, BudgetExceeded (all LLMError)."""
        run = _Run(strategy=strategy, purpose=purpose)
        json_schema = json_schema_of(schema)
        name = schema_name(schema)
        forms = self._forms()
        requests = [(form, self._request(form, messages, name, json_schema)) for form in forms]
        if self.cache is not None:
            for _, request in requests:
                hit = self._from_cache(request, schema, run)
                if hit is not None:
                    return hit
        fatal = self.fatal  # (after the cache: an answer kept is no request)
        if fatal is not None:
            said = str(fatal) if "not sent: " in fatal.reason else f"not sent: {fatal}"
            self._audit(run, key="", outcome="unsent", reason=said)
            raise fatal.with_traceback(None)
        for i, (form, request) in enumerate(requests):
            fallback = forms[i + 1] if i + 1 < len(forms) else None
            try:
                answer = self._send(request, run, form=form, fallback=fallback)
            except _FormRejected:
                continue
            self._learned = form
            return self._finish(request, answer, schema, run, form)
        raise AssertionError("the last form is never rejected")  # pragma: no cover

    # --------------------------------------------------------------- requests

    def _forms(self) -> tuple[Form, ...]:
        chosen = self.settings.response_format
        if chosen != "auto":
            return (chosen,)
        start = FORMS.index(self._learned) if self._learned is not None else 0
        return FORMS[start:]

    def _request(
        self, form: Form, messages: list[dict[str, str]], name: str, json_schema: dict[str, Any]
    ) -> dict[str, Any]:
        """The request body as sent (and as keyed in the cache, with the endpoint)."""
        return {
            "model": self.model,
            "messages": messages_for(form, messages, json_schema),
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_output_tokens,
            "response_format": response_format(form, name, json_schema),
        }

    def _key(self, request: dict[str, Any]) -> str:
        return request_key({"base_url": self.base_url, **request})

    def _from_cache(
        self, request: dict[str, Any], schema: type[T], run: _Run
    ) -> Structured[T] | None:
        assert self.cache is not None
        started = time.monotonic()
        key = self._key(request)
        hit = self.cache.get(key)
        if hit is None:
            return None
        value, _ = parse_answer(hit.raw, schema)
        if value is None:
            return None
        self._audit(
            run,
            key=key,
            outcome="ok",
            reason="answer from cache",
            input_tokens=hit.input_tokens,
            output_tokens=hit.output_tokens,
            latency_ms=(time.monotonic() - started) * 1000,
            cached=True,
        )
        return Structured(
            value=value,
            raw=hit.raw,
            input_tokens=hit.input_tokens,
            output_tokens=hit.output_tokens,
            cached=True,
            attempts=0,
        )

    def _finish(
        self, request: dict[str, Any], answer: Answer, schema: type[T], run: _Run, form: Form
    ) -> Structured[T]:
        self._refusal(run, answer)
        value, problem = parse_answer(answer.text, schema, finish_reason=answer.finish_reason)
        if value is not None:
            self._audit_answer(run, answer, "ok", f"{form} answer")
            return self._done(request, answer, value, run)
        self._audit_answer(
            run, answer, "malformed", f"answer does not match the schema ({problem}); asking again"
        )
        repair = dict(request)
        repair["messages"] = [
            *request["messages"],
            {"role": "assistant", "content": echoed(answer.text)},
            {"role": "user", "content": repair_message(problem or "")},
        ]
        second = self._send(repair, run, form=form, fallback=None)
        self._refusal(run, second)
        value, problem = parse_answer(second.text, schema, finish_reason=second.finish_reason)
        if value is not None:
            self._audit_answer(run, second, "ok", f"repaired {form} answer")
            return self._done(request, second, value, run)
        self._audit_answer(run, second, "malformed", f"repaired answer still invalid ({problem})")
        raise MalformedAnswer(
            problem or "invalid answer", raw=second.text, model=self.model, base_url=self.base_url
        )

    def _refusal(self, run: _Run, answer: Answer) -> None:
        refused = answer.refused()
        if refused is not None:
            self._audit_answer(run, answer, "refused", str(refused))
            raise refused

    def _done(self, request: dict[str, Any], answer: Answer, value: T, run: _Run) -> Structured[T]:
        # Stored under the original request, so asking the same question again is
        # answered from the cache even when this answer needed a repair round.
        if self.cache is not None:
            self.cache.put(
                self._key(request),
                answer.text,
                input_tokens=run.input_tokens,
                output_tokens=run.output_tokens,
            )
        return Structured(
            value=value,
            raw=answer.text,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            cached=False,
            attempts=run.attempts,
        )

    def _send(
        self, request: dict[str, Any], run: _Run, *, form: Form, fallback: Form | None
    ) -> Answer:
        """One answer from the server, retrying what is worth retrying."""
        import openai

        key = self._key(request)
        estimate = sum(count_tokens(m.get("content") or "") for m in request["messages"])
        kwargs = {k: v for k, v in request.items() if v is not None}
        retry = 0
        unreached = 0  # attempts that could not reach the server at all
        failed: str | None = None  # the last failure, said as a user would want it
        last: tuple[str, int | None] | None = None  # (reason, status) of the last failure
        while True:
            try:
                reservation = budget.reserve(estimate)
            except BudgetExceeded as exc:
                refusal = exc if failed is None else exc.after_failure(failed)
                self._audit(run, key=key, outcome="budget", reason=f"not sent: {refusal}")
                raise refusal from None
            run.attempts += 1
            status: int | None = None
            wait: float | None = None
            stop: str | None = None  # why a retryable failure is not retried
            cut = False  # (a timeout the deadline made shorter than the settings')
            started = time.monotonic()
            try:
                with budget.held(self._slots) as left:  # (NoTimeLeft: the deadline passed)
                    started = time.monotonic()
                    timeout = kwargs["timeout"] = min(self.settings.timeout, left)
                    completion = self._openai.chat.completions.create(**kwargs)
                    latency_ms = (time.monotonic() - started) * 1000
                answer = read_completion(completion, key, latency_ms)
                if not (answer.input_tokens or answer.output_tokens):
                    # No usage from the server: charge the client's own count, so a
                    # token budget still holds, and say the counts are estimates.
                    answer.input_tokens = estimate
                    answer.output_tokens = count_tokens(answer.text)
                    answer.estimated = run.estimated = True
                reservation.settle(answer.input_tokens + answer.output_tokens)
                run.input_tokens += answer.input_tokens
                run.output_tokens += answer.output_tokens
                return answer
            except openai.APIStatusError as exc:
                status = exc.status_code
                reason = server_message(exc)
                wait = retry_after_of(exc)
                if status == 429 and quota_exhausted(exc):
                    stop = "the account's quota is used up; waiting will not help"
            except NoTimeLeft:
                run.attempts -= 1  # (not sent, nor charged to a budget)
                reservation.cancel()
                raise self._out_of_time(run, key, last) from None
            except openai.APITimeoutError:
                reason = f"no answer within {seconds_text(timeout)} s"
                cut = timeout < self.settings.timeout
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                reason = f"cannot reach {self.base_url} ({shorten(str(cause), 120)})"
                unreached += not_connected(cause)
            except BadBody as exc:
                status = 200
                reason = str(exc)
                stop = exc.lasting
            except (openai.APIResponseValidationError, ValueError) as exc:
                status = 200
                reason = f"the response is not a chat completion ({shorten(str(exc), 120)})"
            finally:
                reservation.settle(0)
            latency_ms = (time.monotonic() - started) * 1000
            label = f"HTTP {status}: {reason}" if status is not None else reason
            if fallback is not None and self._rejects_form(status, reason):
                self._audit(
                    run,
                    key=key,
                    outcome="retry",
                    reason=f"response_format {form} rejected ({label}), falling back to {fallback}",
                    latency_ms=latency_ms,
                )
                raise _FormRejected()
            if stop is None and wait is not None and wait > RETRY_AFTER_CAP:
                stop = (
                    f"the server asks to wait {wait:.0f} s before retrying, longer than "
                    f"the {RETRY_AFTER_CAP:.0f} s this client waits; try again later"
                )
            plural = "s" if run.attempts != 1 else ""
            failed = (
                f"{label} (model '{self.model}' at {self.base_url}, {run.attempts} attempt{plural})"
            )
            last = (reason, status)
            retrying = stop is None and _transient(status) and retry < self.settings.max_retries
            delay = backoff_delay(retry, wait) if retrying else 0.0
            if cut or (retrying and delay >= budget.time_left()):
                raise self._out_of_time(run, key, last, latency_ms)
            if retrying:
                shown = reason if status in (None, 200) else f"HTTP {status}"
                self._audit(
                    run,
                    key=key,
                    outcome="retry",
                    reason=f"{shown}, retrying in {delay:.1f} s",
                    latency_ms=latency_ms,
                )
                if delay > NOTICE_SECONDS:
                    log.warning(
                        "%s from %s: waiting %.0f s before retry %d of %d",
                        shorten(label, 200),
                        self.base_url,
                        delay,
                        retry + 1,
                        self.settings.max_retries,
                    )
                sleep(delay)
                retry += 1
                continue
            self._audit(run, key=key, outcome="error", reason=label, latency_ms=latency_ms)
            error = LLMCallFailed(
                reason,
                attempts=run.attempts,
                status=status,
                model=self.model,
                base_url=self.base_url,
                hint=stop or hint_for(status),
            )
            if error.fatal or (unreached and unreached == retry + 1):  # (none reached it)
                self._held.hold(error, unreached=not error.fatal)
            raise error

    def _out_of_time(
        self, run: _Run, key: str, last: tuple[str, int | None] | None, latency_ms: float = 0.0
    ) -> DeadlineExceeded:
        """The error (audited) for a call the open deadline stopped, after the
        failure ``last`` (its reason and status), or before anything was sent."""
        error = budget.out_of_time(last, run.attempts, model=self.model, base_url=self.base_url)
        self._audit(run, key=key, outcome="error", reason=str(error), latency_ms=latency_ms)
        return error

    def _rejects_form(self, status: int | None, reason: str) -> bool:
        """Whether an error says "I do not take this response_format".

        Only an error whose message names the response format or schema is a
        rejection (llama.cpp says "Unsupported response format type" with a 500).
        A bare 500 is an ordinary server failure, retried on the same form: taking
        it as a rejection would drop structured output for the rest of the run
        after one bad moment of the server.
        """
        if status not in REJECTION_STATUSES:
            return False
        text = reason.lower()
        return any(word in text for word in _FORMAT_WORDS)

    # ------------------------------------------------------------------ audit

    def _audit_answer(self, run: _Run, answer: Answer, outcome: str, reason: str) -> None:
        if answer.estimated:
            reason += f"; {ESTIMATED}"
            _note_once(ESTIMATED_NOTE)
        self._audit(
            run,
            key=answer.key,
            outcome=outcome,
            reason=reason,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            latency_ms=answer.latency_ms,
        )

    def _audit(
        self,
        run: _Run,
        *,
        key: str,
        outcome: str,
        reason: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        latency_ms: float = 0.0,
        cached: bool = False,
    ) -> None:
        record(
            AuditEntry(
                stage="llm",
                strategy=run.strategy,
                outcome=outcome,
                model=self.model,
                prompt_hash=key[:16],
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                latency_ms=round(latency_ms, 3),
                cached=cached,
                detail=f"{run.purpose}: {reason}" if run.purpose else reason,
            )
        )


def _note_once(text: str) -> None:
    """A report note, unless the open audit scope already has it."""
    log = _current.get()
    if log is not None and any(e.stage == "note" and e.detail == text for e in log.entries):
        return
    note("llm", text)


def _transient(status: int | None) -> bool:
    return status is None or status == 200 or status in RETRY_STATUSES or status >= 500


def backoff_delay(retry: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (0-based): the server's
    Retry-After (capped), else 0.5 s doubling to at most 20 s, jittered down to
    half so that parallel clients do not retry in step."""
    if retry_after is not None and not math.isnan(retry_after):  # ("nan": not a time)
        return min(max(retry_after, 0.0), RETRY_AFTER_CAP)
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * BACKOFF_FACTOR**retry)
    return ceiling * (0.5 + 0.5 * jitter())


_clients: dict[tuple[LLMSettings, str], LLMClient] = {}
_clients_lock = threading.Lock()


def get_client(settings: LLMSettings | None = None) -> LLMClient:
    """The shared client for ``settings`` (default: :func:`current_settings`).

    Equal settings get the same client, so parallel diagnoses share its
    concurrency limit, cache connection and learned response form.
    """
    chosen = settings if settings is not None else current_settings()
    if not chosen.configured:
        raise NoModelConfigured()
    key = (chosen, str(cache_path_for(chosen)) if chosen.cache else "")
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = LLMClient(chosen)
        return client


def reset_clients() -> None:
    """Close and forget every shared client (tests; a changed AGENTDEBUG_HOME)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
