"""A cap on model calls and tokens, checked before every request.

``--budget 8calls,50000tokens`` opens a :func:`budget_scope` around a diagnosis. The
client asks :func:`reserve` before each request: the request must fit in every open
scope (an inner scope can narrow an outer one, never widen it), counting one call
and the prompt's estimated tokens. When the answer comes back, the reservation is
settled with the tokens the server reported, and every open scope is charged.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from agentdebug.errors import ConfigError
from agentdebug.llm.errors import BudgetExceeded

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
