"""The long-term store (``compile(store=...)``) as a rerun branch sees it.

A branch reruns the graph from a checkpoint; LangGraph restores the thread's state
from it, but not the store, which the run's later steps may have written to and
which is your users' memory. So a branch runs on a view of the graph's store:

- it reads the store as it was when the fork's checkpoint was taken: an item
  created after that (by the run's later steps, or by anything else since) is not
  there for it; an item that existed then but was changed since is read as it is
  now (the store keeps no history), and the branch's log says so;
- what it writes (puts, deletes) stays in the view, in memory, for the branch's
  own later reads: the graph's store is never written, and nothing the branch did
  reaches your users.

A branch of a branch reads the view of the branch it forks, in this process.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Generator, Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

log = logging.getLogger("agentdebug.langgraph")

_PAGE = 100  # items asked of the graph's store at a time by a branch's search
_KEPT = 64  # views kept for branches of branches (the newest)
_views: OrderedDict[str, BranchStore] = OrderedDict()

Key = tuple[tuple[str, ...], str]
Plan = Generator[list[Op], list[Any], Result]  # (the graph's store's results come back)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class BranchStore(BaseStore):
    """``base`` as it was at ``as_of`` (``None``: as it is), with the branch's own
    writes kept apart. See the module's docstring."""

    def __init__(self, base: BaseStore, as_of: datetime | None) -> None:
        self.base = base
        self.as_of = _aware(as_of) if as_of is not None else None
        self.written = InMemoryStore()  # the branch's puts
        self.deleted: set[Key] = set()  # the branch's deletes
        self.changed: set[Key] = set()  # items read that were changed after as_of

    def _visible(self, item: Item) -> bool:
        key = (tuple(item.namespace), item.key)
        if key in self.deleted or self.written.get(item.namespace, item.key) is not None:
            return False  # (the branch's own version, or none, stands instead)
        if self.as_of is None:
            return True
        if _aware(item.created_at) > self.as_of:
            return False
        if _aware(item.updated_at) > self.as_of and key not in self.changed:
            self.changed.add(key)
            log.warning(
                "agentdebug: the branch read store item %s/%s as it is now: it was "
                "changed after the checkpoint the branch forks, and the store keeps "
                "no earlier value",
                "/".join(item.namespace),
                item.key,
            )
        return True

    def _plan(self, op: Op) -> Plan:
        """One operation: the operations on the graph's store it needs (yielded; the
        results come back), then its result."""
        if isinstance(op, PutOp):
            key = (tuple(op.namespace), op.key)
            if op.value is None:
                self.deleted.add(key)
                self.written.delete(op.namespace, op.key)
            else:
                self.deleted.discard(key)
                self.written.put(op.namespace, op.key, dict(op.value), index=False)
            return None
        if isinstance(op, GetOp):
            (found,) = yield [GetOp(op.namespace, op.key, refresh_ttl=False)]
            own = self.written.get(op.namespace, op.key)
            if own is not None:
                return own
            return found if isinstance(found, Item) and self._visible(found) else None
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        if isinstance(op, ListNamespacesOp):
            wide = op._replace(limit=op.offset + op.limit, offset=0)
            (theirs,) = yield [wide]
            mine: list[tuple[str, ...]] = self.written.batch([wide])[0]  # type: ignore[assignment]
            names = set(theirs or ()) | set(mine)
            return sorted(names)[op.offset : op.offset + op.limit]
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _search(self, op: SearchOp) -> Plan:
        """The graph's store's matches (visible ones, in its order), then the
        branch's own; ``offset`` and ``limit`` over the two together."""
        want = op.offset + op.limit
        kept: list[Item] = []
        at = 0
        while len(kept) < want:
            ask = op._replace(limit=_PAGE, offset=at, refresh_ttl=False)
            (page,) = yield [ask]
            page = list(page or ())
            kept.extend(item for item in page if self._visible(item))
            at += len(page)
            if len(page) < _PAGE:
                break
        own = self.written.search(op.namespace_prefix, filter=op.filter, limit=want)
        return [*kept, *own][op.offset : want]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        out: list[Result] = []
        for op in ops:
            plan = self._plan(op)
            try:
                asks = next(plan)
                while True:
                    asks = plan.send(self.base.batch(asks))
            except StopIteration as done:
                out.append(done.value)
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        out: list[Result] = []
        for op in ops:
            plan = self._plan(op)
            try:
                asks = next(plan)
                while True:
                    asks = plan.send(await self.base.abatch(asks))
            except StopIteration as done:
                out.append(done.value)
        return out


def branch_view(graph: Any, forked_thread: str, as_of: str | None, branch_thread: str) -> Any:
    """``graph`` with its store replaced by a view for the branch on
    ``branch_thread`` (``graph`` itself when it has no store): the store as of the
    fork's checkpoint's time ``as_of`` (ISO), read through the view of the branch
    whose thread ``forked_thread`` is, when that branch ran in this process."""
    store = getattr(graph, "store", None)
    if store is None:
        return graph
    when = None
    if as_of:
        try:
            when = datetime.fromisoformat(as_of)
        except ValueError:
            log.warning("agentdebug: the fork's checkpoint time %r is not a date", as_of)
    view = BranchStore(_views.get(forked_thread, store), when)
    _views[branch_thread] = view
    _views.move_to_end(branch_thread)
    while len(_views) > _KEPT:
        _views.popitem(last=False)
    return graph.copy(update={"store": view})
