"""Where a LangGraph task sits: its checkpoint namespace and its task path."""

from __future__ import annotations

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
