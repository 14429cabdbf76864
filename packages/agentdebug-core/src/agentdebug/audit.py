"""The audit trail: every unit of diagnostic work, collected per diagnosis.

Strategies and the model client call :func:`record` wherever they work; whoever
runs a diagnosis opens an :func:`audit_scope` around it and gets every entry made
inside, whatever the call depth, thread-safe per context. Cost figures in reports
and benchmarks are sums over these entries, so they are the real ones.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from agentdebug.schema import AuditEntry, Cost


class AuditLog:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []
        self._lock = threading.Lock()

    def add(self, entry: AuditEntry) -> None:
        with self._lock:
            self.entries.append(entry)

    @property
    def cost(self) -> Cost:
        return Cost.of(self.entries)


_current: ContextVar[AuditLog | None] = ContextVar("agentdebug_audit", default=None)


def record(entry: AuditEntry) -> None:
    """Add an entry to the innermost open audit scope (and every enclosing one)."""
    log = _current.get()
    if log is not None:
        log.add(entry)


@contextmanager
def audit_scope() -> Iterator[AuditLog]:
    """Collect the entries recorded inside; nested scopes also feed their parent."""
    parent = _current.get()
    log = _ScopedLog(parent)
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)


class _ScopedLog(AuditLog):
    def __init__(self, parent: AuditLog | None) -> None:
        super().__init__()
        self.parent = parent

    def add(self, entry: AuditEntry) -> None:
        super().add(entry)
        if self.parent is not None:
            self.parent.add(entry)


# how the note of a model stage that failed, whose answer is then earlier stages',
# ends (the summary paragraph of an automatic diagnosis says so)
FALLBACK = "answering with what earlier stages found"
# how a note ends when a failed model attributor's answer is the heuristic's, or when
# unreadable model settings left the diagnosis to the free tier
HEURISTIC_INSTEAD = "the heuristic attributor's answer is used instead"
FREE_TIER_INSTEAD = "the free tier is used"


def note(strategy: str, text: str) -> None:
    """Say something the report's reader must know (a fallback, a stop, a limit).

    Notes travel with the audit trail and become the report's notes."""
    record(AuditEntry(stage="note", strategy=strategy, detail=text))
