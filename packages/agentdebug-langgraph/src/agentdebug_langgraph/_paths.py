"""Where a LangGraph task sits: its checkpoint namespace and its task path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def parent_namespace(ns: str) -> str:
    """The namespace of the node a subgraph node runs in: ``sub:<task>`` for
    ``sub:<task>|inner:<task>``, also when a retried subgraph numbers its run
    (``sub:<task>|1|inner:<task>``)."""
    head = ns.rpartition("|")[0]
    while head and head.rpartition("|")[2].isdigit():
        head = head.rpartition("|")[0]
    return head


def task_path_key(path: Any) -> str:
    """A task path as LangGraph orders the tasks of a super-step when it applies their
    writes (so ``Send`` packets are numbered in this order): zero-padded integers,
    nested paths prefixed with ``~``."""
    if isinstance(path, (tuple, list)):
        return "~" + ", ".join(task_path_key(x) for x in path)
    if isinstance(path, int):
        return f"{path:010d}"
    return str(path)


class _InOrder(list[tuple[str, str | None]]):
    """A step's ``Send`` senders (``GraphRun.sends``) sorted as LangGraph numbers
    the packets, with their events in that order (``senders``)."""

    def __init__(self, noted: list[tuple[str, str | None]]) -> None:
        super().__init__(sorted(noted, key=lambda entry: entry[0]))
        self.n = len(self)
        self.senders = [event for _, event in self]


def sender_of(run: Any, ns: str, lg_step: Any, path: Sequence[Any]) -> str | None:
    """The event of the node whose ``Send`` created a branch at ``path`` (by its
    index among the step's sends: ``run.sends``, a ``GraphRun``'s)."""
    if not isinstance(lg_step, int) or len(path) < 2 or not isinstance(path[1], int):
        return None
    key = (ns, lg_step - 1)
    noted = run.sends.get(key)
    if not noted:
        return None
    # nodes finish in any order; LangGraph numbers the packets in task-path order:
    # put in that order once for the step's branches (not once each: with thousands
    # of Send branches that was quadratic)
    if noted.__class__ is not _InOrder or noted.n != len(noted):
        noted = run.sends[key] = _InOrder(noted)
    senders: list[str | None] = noted.senders
    index = path[1]
    return senders[index] if index < len(senders) else senders[-1]
