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
from collections.abc import Generator, Iterable, Sequence
from datetime import datetime
from typing import Any

from agentdebug.schema import AgentTrajectory, EventType
from agentdebug.schema.trace import aware
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
Spans = tuple[Sequence[tuple[float, float]], Sequence[tuple[float, float]]]
Plan = Generator[list[Op], list[Any], Result]  # (the graph's store's results come back)
Check = Generator[list[Op], list[Any], bool]


class BranchStore(BaseStore):
    """``base`` as it was at ``as_of`` (``None``: as it is), with the branch's own
    writes kept apart. See the module's docstring."""

    supports_ttl = True  # (a put's ttl is taken and not kept: the branch is short-lived)

    def __init__(self, base: BaseStore, as_of: datetime | None, spans: Spans = ((), ())) -> None:
        self.base = base
        self.as_of = aware(as_of) if as_of is not None else None
        self.spans = spans  # the run's node runs (start, end) before the fork, and after
        self.said_unsure = False
        self.written = _like(base)  # the branch's puts, searched as the base searches
        self.indexed = bool(getattr(self.written, "index_config", None))
        self.deleted: set[Key] = set()  # the branch's deletes
        self.changed: set[Key] = set()  # items read that were changed after as_of

    def _before(self, when: datetime) -> bool:
        """Whether a store's time is not after ``as_of``. A time with no fraction of
        a second (SQLite's ``CURRENT_TIMESTAMP``) is compared by the second; in the
        fork's own second, by the run's node runs that second: after the fork when
        only nodes after it ran then, else before (both ran then: said in the log)."""
        assert self.as_of is not None
        when = aware(when)
        if when.microsecond != 0:
            return when <= self.as_of
        fork_second = self.as_of.replace(microsecond=0)
        if when != fork_second:
            return when < fork_second
        second = when.timestamp()
        ran = [any(a < second + 1 and b >= second for a, b in side) for side in self.spans]
        if ran[1] and ran[0] and not self.said_unsure:
            self.said_unsure = True
            log.warning(
                "agentdebug: the store dates an item to the fork's own second, in which "
                "nodes ran both before the fork and after it; the branch reads it"
            )
        return not (ran[1] and not ran[0])

    def _visible(self, item: Item, note: bool = True) -> bool:
        """Whether the branch sees ``item``; ``note``: a read, which says when it reads
        an item changed since the fork (a listing only looks)."""
        key = (tuple(item.namespace), item.key)
        if key in self.deleted or self.written.get(item.namespace, item.key) is not None:
            return False  # (the branch's own version, or none, stands instead)
        if self.as_of is None:
            return True
        if not self._before(item.created_at):
            return False
        if note and not self._before(item.updated_at) and key not in self.changed:
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
                index = op.index if self.indexed else False
                self.written.put(op.namespace, op.key, dict(op.value), index=index)
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
            return (yield from self._namespaces(op))
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _namespaces(self, op: ListNamespacesOp) -> Plan:
        """The graph's store's namespaces that hold an item the branch sees (one
        whose items were all made after the fork, or deleted by the branch, is not
        there for it), and the branch's own; ``offset`` and ``limit`` over both."""
        want = op.offset + op.limit
        every = op._replace(limit=2**62, offset=0)
        listed: list[tuple[str, ...]] = self.written.batch([every])[0]  # type: ignore[assignment]
        # (an in-memory store lists a namespace it was only asked about, or whose
        # items were all deleted)
        mine = {name for name in listed if self.written.search(name, limit=1)}
        kept: set[tuple[str, ...]] = set()
        at = 0
        while len(kept) < want:
            (page,) = yield [op._replace(limit=_PAGE, offset=at)]
            page = list(page or ())
            for name in page:
                if name not in mine and (yield from self._holds_visible(tuple(name), op)):
                    kept.add(tuple(name))
            at += len(page)
            if len(page) < _PAGE:
                break
        return sorted(kept | mine)[op.offset : want]

    def _holds_visible(self, prefix: tuple[str, ...], op: ListNamespacesOp) -> Check:
        """Whether an item under ``prefix`` in the graph's store is there for the
        branch, in a namespace ``op``'s conditions take (``prefix`` may be cut short
        by its ``max_depth``)."""
        if self.as_of is None and not self.deleted:
            return True
        at = 0
        while True:
            ask = SearchOp(prefix, limit=_PAGE, offset=at, refresh_ttl=False)
            (page,) = yield [ask]
            page = list(page or ())
            if any(
                _matches(item.namespace, op.match_conditions) and self._visible(item, note=False)
                for item in page
            ):
                return True
            at += len(page)
            if len(page) < _PAGE:
                return False

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
        query = op.query if self.indexed else None
        own = self.written.search(op.namespace_prefix, query=query, filter=op.filter, limit=want)
        found: list[Item] = [*kept, *own]
        if op.query:  # (ranked as the store ranks: by score, the unscored last)
            found.sort(key=_rank)
        return found[op.offset : want]

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


def _matches(namespace: Sequence[str], conditions: Any) -> bool:
    """Whether a namespace meets a listing's prefix and suffix conditions ("*" any)."""
    for condition in conditions or ():
        path = tuple(condition.path)
        if len(namespace) < len(path):
            return False
        ends = (
            namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
        )
        if path and any(p != "*" and p != k for p, k in zip(path, ends, strict=True)):
            return False
    return True


def _rank(item: Item) -> float:
    """A search hit's place: by score, highest first; one with no score (a score of
    0 is a score) last."""
    score = getattr(item, "score", None)
    return -score if score is not None else float("inf")


def _like(base: BaseStore) -> InMemoryStore:
    """An empty store for a branch's own writes that searches as ``base`` does: with
    its embeddings, where it has an index (else by filter alone)."""
    config = getattr(base, "index_config", None)
    embeddings = getattr(base, "embeddings", None)
    if not config or embeddings is None:
        return InMemoryStore()
    index = {k: config[k] for k in ("dims", "fields") if k in config}
    try:
        return InMemoryStore(index={**index, "embed": embeddings})  # type: ignore[arg-type]
    except Exception:  # (an index this store cannot copy: searched by filter alone)
        log.warning("agentdebug: the branch's own store writes are searched without an index")
        return InMemoryStore()


def _date(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) and text else None
    except ValueError:
        log.warning("agentdebug: the fork's checkpoint time %r is not a date", text)
        return None


def node_spans(run: AgentTrajectory, step: int) -> Spans:
    """The (start, end) times of the run's node runs before ``step``, and from it."""
    ends = {e.parent_id: e.timestamp for e in run.events if e.type is EventType.AGENT_END}
    out: tuple[list[tuple[float, float]], list[tuple[float, float]]] = ([], [])
    for e in run.events:
        if e.type is EventType.AGENT_START and e.timestamp is not None:
            end = ends.get(e.id) or e.timestamp
            out[e.step_index >= step].append((e.timestamp.timestamp(), end.timestamp()))
    return out


def branch_view(
    graph: Any,
    forked_thread: str,
    as_of: str | None,
    branch_thread: str,
    first: Any = None,
    spans: Spans = ((), ()),
) -> Any:
    """``graph`` with its store replaced by a view for the branch on
    ``branch_thread`` (``graph`` itself when it has no store): the store as of the
    fork's checkpoint's time ``as_of`` (ISO), read through the view of the branch
    whose thread ``forked_thread`` is, when that branch ran in this process. A
    branch of a branch that ran in another process reads the store as of ``first``,
    the time that branch read it as of (its own writes are gone with it)."""
    store = getattr(graph, "store", None)
    if store is None:
        return graph
    when, before = _date(as_of), _date(first)
    if forked_thread not in _views and before is not None:
        log.warning(
            "agentdebug: the branch forks a branch that ran in another process: it reads "
            "the store as that branch first did, without what that branch wrote"
        )
        when = min(when, before) if when is not None else before
    view = BranchStore(_views.get(forked_thread, store), when, spans)
    _views[branch_thread] = view
    _views.move_to_end(branch_thread)
    while len(_views) > _KEPT:
        _views.popitem(last=False)
    return graph.copy(update={"store": view})


def store_note(view: BranchStore) -> dict[str, Any]:
    """What the branch's record says of the store it ran on."""
    when = view.as_of.isoformat() if view.as_of is not None else None
    return {"read_as_of": when, "written": False}
