"""A cap on model calls and tokens, checked before every request; and a deadline.

``--budget 8calls,50000tokens`` opens a :func:`budget_scope` around a diagnosis. The
client asks :func:`reserve` before each request: the request must fit in every open
scope (an inner scope can narrow an outer one, never widen it), counting one call
and the prompt's estimated tokens. When the answer comes back, the reservation is
settled with the tokens the server reported, and every open scope is charged.

A :func:`deadline_scope` caps the wall-clock time of the model calls inside it
(the automatic diagnosis of a failed run opens one, so that a hung model cannot
hold up the user's program): the client cuts each request's timeout to what is
left, waits for no retry that would end past it, and sends nothing once it has
passed, raising :class:`DeadlineExceeded`, a model failure like any other (the
diagnosis falls back to the free tier, or with ``no_fallback`` ends, saying so).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from agentdebug.errors import ConfigError
from agentdebug.llm.errors import BudgetExceeded, LLMCallFailed

_NUMBER = r"(\d[\d_]*)(k|m)?"
_PLAIN = re.compile(rf"^{_NUMBER}$")
_SUFFIXED = re.compile(rf"^{_NUMBER}(calls?|tokens?)$")
_ASSIGNED = re.compile(r"^(calls?|tokens?)=" + _NUMBER + "$")
_SCALE = {None: 1, "k": 1_000, "m": 1_000_000}


@dataclass
class Budget:
    """At most ``max_calls`` requests and ``max_tokens`` tokens (None: no limit)."""

    max_calls: int | None = None
    max_tokens: int | None = None

    @classmethod
    def parse(cls, text: str) -> Budget:
        """Read ``20000`` (tokens), ``8calls``, ``50000tokens``, ``50k tokens``,
        ``8calls,50000tokens`` or ``calls=8,tokens=50000``."""
        parts = [p.replace(" ", "").lower() for p in text.split(",")]
        if not text.strip() or not all(parts):
            raise ConfigError(f"budget {text!r}: expected e.g. 20000, 8calls or 8calls,50000tokens")
        found: dict[str, int] = {}
        for part in parts:
            if m := _PLAIN.match(part):
                kind, number, scale = "tokens", m.group(1), m.group(2)
            elif m := _SUFFIXED.match(part):
                kind, number, scale = m.group(3), m.group(1), m.group(2)
            elif m := _ASSIGNED.match(part):
                kind, number, scale = m.group(1), m.group(2), m.group(3)
            else:
                raise ConfigError(
                    f"budget {text!r}: cannot read {part!r} (expected e.g. 8calls or 50000tokens)"
                )
            kind = kind if kind.endswith("s") else kind + "s"
            if kind in found:
                raise ConfigError(f"budget {text!r}: {kind} given twice")
            found[kind] = int(number.replace("_", "")) * _SCALE[scale]
        return cls(max_calls=found.get("calls"), max_tokens=found.get("tokens"))

    def __str__(self) -> str:
        parts = []
        if self.max_calls is not None:
            parts.append(f"{self.max_calls}calls")
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens}tokens")
        return ",".join(parts) or "unlimited"


@dataclass(frozen=True)
class Remaining:
    """What may still be spent (None: no limit)."""

    calls: int | None
    tokens: int | None


class BudgetScope:
    """The spending inside one :func:`budget_scope`; thread-safe."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.calls = 0
        self.tokens = 0
        self._pending_tokens = 0
        self._lock = threading.Lock()

    def remaining(self) -> Remaining:
        with self._lock:
            calls = None if self.budget.max_calls is None else self.budget.max_calls - self.calls
            tokens = (
                None
                if self.budget.max_tokens is None
                else self.budget.max_tokens - self.tokens - self._pending_tokens
            )
        return Remaining(
            calls=None if calls is None else max(calls, 0),
            tokens=None if tokens is None else max(tokens, 0),
        )

    def _refusal(self, estimate: int) -> BudgetExceeded | None:
        b = self.budget
        if b.max_calls is not None and self.calls + 1 > b.max_calls:
            return BudgetExceeded(kind="calls", spent=self.calls, limit=b.max_calls, needed=1)
        committed = self.tokens + self._pending_tokens
        if b.max_tokens is not None and committed + estimate > b.max_tokens:
            return BudgetExceeded(
                kind="tokens", spent=committed, limit=b.max_tokens, needed=estimate
            )
        return None


_scopes: ContextVar[tuple[BudgetScope, ...]] = ContextVar("agentdebug_budget", default=())
# One lock for check-and-reserve across scopes, so two threads cannot both take
# the last call of a shared scope.
_reserve_lock = threading.Lock()


@contextmanager
def budget_scope(budget: Budget | None) -> Iterator[BudgetScope | None]:
    """Apply ``budget`` to the model calls made inside (None: no new limit).

    Scopes nest: a request must fit in every open one, and what it spends is
    charged to all of them.
    """
    if budget is None:
        yield None
        return
    scope = BudgetScope(budget)
    token = _scopes.set((*_scopes.get(), scope))
    try:
        yield scope
    finally:
        _scopes.reset(token)


def remaining() -> Remaining:
    """The tightest limits over all open scopes (None where nothing limits)."""
    calls: int | None = None
    tokens: int | None = None
    for scope in _scopes.get():
        r = scope.remaining()
        if r.calls is not None:
            calls = r.calls if calls is None else min(calls, r.calls)
        if r.tokens is not None:
            tokens = r.tokens if tokens is None else min(tokens, r.tokens)
    return Remaining(calls=calls, tokens=tokens)


class Reservation:
    """One request's claim on the open scopes; settle it exactly once."""

    def __init__(self, scopes: tuple[BudgetScope, ...], estimate: int) -> None:
        self._scopes = scopes
        self._estimate = estimate
        self._settled = False

    def settle(self, tokens: int) -> None:
        """Replace the estimate with what the server reported (0 if it sent nothing)."""
        if self._settled:
            return
        self._settled = True
        for scope in self._scopes:
            with scope._lock:
                scope._pending_tokens -= self._estimate
                scope.tokens += tokens

    def cancel(self) -> None:
        """Give the call and the estimate back: the request was never sent."""
        if self._settled:
            return
        self._settled = True
        for scope in self._scopes:
            with scope._lock:
                scope._pending_tokens -= self._estimate
                scope.calls -= 1


def reserve(estimated_tokens: int) -> Reservation:
    """Claim one call and ``estimated_tokens`` in every open scope, or raise
    BudgetExceeded (from the innermost scope that refuses) without claiming any."""
    scopes = _scopes.get()
    with _reserve_lock:
        for scope in reversed(scopes):
            with scope._lock:
                refusal = scope._refusal(estimated_tokens)
            if refusal is not None:
                raise refusal
        for scope in scopes:
            with scope._lock:
                scope.calls += 1
                scope._pending_tokens += estimated_tokens
    return Reservation(scopes, estimated_tokens)


# ------------------------------------------------------------------------ deadline


def seconds_text(seconds: float) -> str:
    """``60``, ``1.5``: a number of seconds as a person writes it."""
    return f"{round(seconds, 1):g}"


@dataclass(frozen=True)
class Deadline:
    """The model calls inside a :func:`deadline_scope` end by ``ends``
    (``time.monotonic()``). ``what`` names it in errors ("the automatic
    diagnosis's 60 s deadline for model calls"), ``hint`` says how to change it."""

    seconds: float
    ends: float
    what: str
    hint: str | None = None

    def left(self) -> float:
        """Seconds left (0 or less: it has passed)."""
        return self.ends - time.monotonic()


class DeadlineExceeded(LLMCallFailed):
    """A model call stopped, or was not sent, because a :func:`deadline_scope`'s
    time ran out. ``reason`` is the last failure ("no answer within 12 s"), or
    None when nothing was sent; ``attempts`` counts the requests sent."""

    def __init__(
        self,
        deadline: Deadline,
        *,
        reason: str | None,
        attempts: int,
        status: int | None = None,
        model: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self.deadline = deadline
        ran_out = f"{deadline.what} ran out"
        if deadline.hint:
            ran_out += f" ({deadline.hint})"
        super().__init__(
            reason or "not sent",
            attempts=attempts,
            status=status,
            model=model,
            base_url=base_url,
            hint=ran_out,
        )
        if reason is None:  # (not "failed after 0 attempts")
            to = f" to model '{model}'" if model else ""
            to += f" at {base_url}" if base_url else ""
            self.args = (f"model call{to} not sent: {ran_out}",)


_deadlines: ContextVar[tuple[Deadline, ...]] = ContextVar("agentdebug_deadline", default=())


@contextmanager
def deadline_scope(
    seconds: float | None, what: str | None = None, *, hint: str | None = None
) -> Iterator[Deadline | None]:
    """End the model calls made inside within ``seconds`` of now (None: no new
    limit). Scopes nest: the one that ends first holds. ``what`` names the
    deadline in errors, ``hint`` says how to change it."""
    if seconds is None:
        yield None
        return
    limit = Deadline(
        seconds=seconds,
        ends=time.monotonic() + seconds,
        what=what or f"the {seconds_text(seconds)} s deadline for model calls",
        hint=hint,
    )
    token = _deadlines.set((*_deadlines.get(), limit))
    try:
        yield limit
    finally:
        _deadlines.reset(token)


def deadline() -> Deadline | None:
    """The open deadline that ends first (None: none is open)."""
    return min(_deadlines.get(), key=lambda d: d.ends, default=None)


def time_left() -> float:
    """Seconds left to the open deadline that ends first (``math.inf``: none is open)."""
    limit = deadline()
    return math.inf if limit is None else limit.left()


def out_of_time(
    last: tuple[str, int | None] | None, attempts: int, *, model: str, base_url: str
) -> DeadlineExceeded:
    """The error for a model call the open deadline stopped, after the failure
    ``last`` (its reason and HTTP status), or before anything was sent (None)."""
    limit = deadline()
    assert limit is not None, "no deadline is open"
    reason, status = last if last is not None else (None, None)
    return DeadlineExceeded(
        limit, reason=reason, attempts=attempts, status=status, model=model, base_url=base_url
    )


# ------------------------------------------------------------- concurrency slots

_slots: dict[tuple[str, str, int], threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def shared_slots(base_url: str, model: str, concurrency: int) -> threading.BoundedSemaphore:
    """One semaphore per endpoint, model and concurrency, shared by every client."""
    with _slots_lock:
        key = (base_url, model, concurrency)
        if key not in _slots:
            _slots[key] = threading.BoundedSemaphore(concurrency)
        return _slots[key]


class NoTimeLeft(Exception):
    """The open deadline passed before a request could be sent."""


@contextmanager
def held(slots: threading.BoundedSemaphore) -> Iterator[float]:
    """One of ``slots`` held inside, waited for no longer than the open deadline
    allows; yields the seconds then left to it (``math.inf``: none is open).
    Raises :class:`NoTimeLeft` when it passed first."""
    left = time_left()
    if not slots.acquire(timeout=None if left == math.inf else max(left, 0.0)):
        raise NoTimeLeft()
    try:
        left = time_left()
        if left <= 0:
            raise NoTimeLeft()
        yield left
    finally:
        slots.release()
