"""A rerun branch and the graph's long-term store (``compile(store=...)``): the
branch reads the store as it was at the fork and never writes it, so your users'
memory keeps nothing of a debugging branch, and a branch is not failed by what the
run's own later steps wrote."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.rerun import closed_loop
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from agentdebug_langgraph._branch_store import BranchStore, branch_view
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore
from lg_graphs import Heeding


@dataclass
class User:
    user_id: str


def memory_graph(store: Any, ttl: float | None = None) -> Any:
    """``memorize`` saves what the model made of the user's message as a memory;
    ``confirm`` reads the user's memories back to them."""
    model = Heeding(
        cue="went wrong", default="memory: likes peanuts", heeded="memory: allergic to peanuts"
    )

    def memorize(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        reply = model.invoke(state["messages"])
        ns = ("memories", runtime.context.user_id)
        key = f"m{len(runtime.store.search(ns))}"
        if ttl is None:
            runtime.store.put(ns, key, {"text": reply.content})
        else:
            runtime.store.put(ns, key, {"text": reply.content}, ttl=ttl)
        return {"messages": [reply]}

    def confirm(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        ns = ("memories", runtime.context.user_id)
        said = "; ".join(item.value["text"] for item in runtime.store.search(ns))
        return {"messages": [AIMessage(f"Noted. I remember: {said}")]}

    g = StateGraph(MessagesState, context_schema=User)
    g.add_node("memorize", memorize)
    g.add_node("confirm", confirm)
    g.add_edge(START, "memorize")
    g.add_edge("memorize", "confirm")
    g.add_edge("confirm", END)
    return g.compile(checkpointer=InMemorySaver(), store=store)


def remembered_right(state: dict[str, Any]) -> bool | str:
    said = str(state["messages"][-1].content)
    if "allergic" in said and "likes peanuts" not in said:
        return True
    return f"stored the wrong memory: {said}"


def memories(store: InMemoryStore) -> list[str]:
    return [item.value["text"] for item in store.search(("memories", "u1"))]


def test_a_branch_neither_writes_the_users_store_nor_reads_the_runs_later_writes(
    dbg: AgentDebug,
) -> None:
    store = InMemoryStore()
    graph = memory_graph(store)
    cb = AgentDebugCallback(dbg, success_check=remembered_right)
    graph.invoke(
        {"messages": [HumanMessage("I am allergic to peanuts")]},
        {"callbacks": [cb], "configurable": {"thread_id": "t1"}},
        context=User("u1"),
    )
    assert memories(store) == ["memory: likes peanuts"]
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=remembered_right)
    result = closed_loop(cb.trajectory(), debugger=dbg, executor=executor, policy="auto")
    # the branch did not read the wrong memory the run saved after the fork, so the
    # corrected step passes
    assert result.status == "succeeded" and result.verified_by_rerun is True
    branch = dbg.store.load_trajectory(result.attempts[0].branch_id or "")  # type: ignore[union-attr]
    assert branch.outcome.final_answer == "Noted. I remember: memory: allergic to peanuts"
    assert branch.metadata["langgraph"]["fork"]["store"]["written"] is False
    assert memories(store) == ["memory: likes peanuts"]  # the user's memory as the run left it


def _seeded() -> tuple[InMemoryStore, datetime]:
    """Items made before the fork's time and after it; ``changed`` is overwritten
    after it, and keeps its creation time (as a Postgres store keeps it; an
    InMemoryStore dates an overwrite as a new item)."""
    base = InMemoryStore()
    base.put(("notes",), "old", {"text": "before the fork"})
    base.put(("notes",), "changed", {"text": "first value"})
    created = base.get(("notes",), "changed").created_at  # type: ignore[union-attr]
    time.sleep(0.01)
    fork_time = datetime.now(UTC)
    time.sleep(0.01)
    base.put(("notes",), "new", {"text": "after the fork"})
    base.put(("notes",), "changed", {"text": "second value"})
    base._data[("notes",)]["changed"].created_at = created
    return base, fork_time


def test_the_view_reads_the_store_as_of_the_fork_and_keeps_its_writes_apart(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base, fork_time = _seeded()
    view = BranchStore(base, fork_time)
    only_changed = BranchStore(base, fork_time)
    only_changed.delete(("notes",), "old")  # (so the listing looks at "changed")
    assert only_changed.list_namespaces() == [("notes",)]
    assert "changed after" not in caplog.text  # (a listing reads no item: nothing to say)
    assert view.get(("notes",), "new") is None  # created after the fork
    assert view.get(("notes",), "old").value == {"text": "before the fork"}  # type: ignore[union-attr]
    # changed since, with no earlier value kept: read as it is now, and said so
    assert view.get(("notes",), "changed").value == {"text": "second value"}  # type: ignore[union-attr]
    assert "changed after the checkpoint the branch forks" in caplog.text
    view.put(("notes",), "mine", {"text": "the branch's"})
    view.delete(("notes",), "old")
    assert [i.key for i in view.search(("notes",))] == ["changed", "mine"]
    assert view.get(("notes",), "old") is None
    assert view.list_namespaces() == [("notes",)]
    # the graph's store has none of it
    assert {i.key: i.value["text"] for i in base.search(("notes",))} == {
        "old": "before the fork",
        "changed": "second value",
        "new": "after the fork",
    }


def test_the_views_search_pages_over_hidden_items_and_its_own() -> None:
    base = InMemoryStore()
    for n in range(5):
        base.put(("docs",), f"kept{n}", {"n": n})
    fork_time = datetime.now(UTC)
    time.sleep(0.01)
    for n in range(250):  # more than a page of items the branch must not see
        base.put(("docs",), f"later{n}", {"n": n})
    view = BranchStore(base, fork_time)
    view.put(("docs",), "own", {"n": 99})
    keys = [i.key for i in view.search(("docs",), limit=10)]
    assert keys == [f"kept{n}" for n in range(5)] + ["own"]
    assert [i.key for i in view.search(("docs",), limit=2, offset=4)] == ["kept4", "own"]
    assert [i.key for i in view.search(("docs",), filter={"n": 3})] == ["kept3"]


def test_the_view_lists_only_namespaces_holding_an_item_it_sees() -> None:
    base = InMemoryStore()
    base.put(("users", "ann", "notes"), "a", {"n": 1})
    base.put(("users", "bob", "notes"), "b", {"n": 2})
    fork_time = datetime.now(UTC)
    time.sleep(0.01)
    base.put(("users", "cat", "notes"), "c", {"n": 3})  # after the fork
    for n in range(120):  # more than a page of namespaces made after it
        base.put(("later", f"{n:03}"), "x", {"n": n})
    view = BranchStore(base, fork_time)
    view.delete(("users", "bob", "notes"), "b")  # its only item, deleted by the branch
    view.put(("users", "dan", "notes"), "d", {"n": 4})
    assert view.list_namespaces() == [("users", "ann", "notes"), ("users", "dan", "notes")]
    assert view.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "ann"),
        ("users", "dan"),
    ]
    assert view.list_namespaces(limit=1, offset=1) == [("users", "dan", "notes")]
    # a namespace cut short by max_depth is listed only for an item in a namespace
    # the conditions take: eve's notes were made after the fork, her drafts before
    base.put(("users", "eve", "drafts"), "x", {"n": 5})
    view = BranchStore(base, datetime.now(UTC))
    base.put(("users", "eve", "notes"), "e", {"n": 6})
    assert view.list_namespaces(suffix=("notes",), max_depth=2) == [
        ("users", "ann"),
        ("users", "bob"),
        ("users", "cat"),
    ]
    # the graph's store lists all of its own
    assert len(base.list_namespaces(limit=200)) == 125


def test_the_view_answers_async_calls_too() -> None:
    base, fork_time = _seeded()
    view = BranchStore(base, fork_time)

    async def use() -> list[str]:
        await view.aput(("notes",), "mine", {"text": "async"})
        assert await view.aget(("notes",), "new") is None
        return [i.key for i in await view.asearch(("notes",))]

    assert asyncio.run(use()) == ["old", "changed", "mine"]
    assert base.get(("notes",), "mine") is None


def test_a_branch_of_a_branch_reads_the_first_branchs_writes_made_before_its_fork() -> None:
    base = InMemoryStore()
    graph = memory_graph(base)
    first = branch_view(graph, "t1", None, "t1~agentdebug-a").store
    first.put(("notes",), "early", {"text": "branch 1, before the second fork"})
    fork_time = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    first.put(("notes",), "late", {"text": "branch 1, after it"})
    second = branch_view(graph, "t1~agentdebug-a", fork_time, "t1~agentdebug-b").store
    assert [i.key for i in second.search(("notes",))] == ["early"]
    assert base.search(("notes",)) == []


def test_a_graph_without_a_store_is_run_as_it_is() -> None:
    g = StateGraph(MessagesState)
    g.add_node("n", lambda s: {})
    g.add_edge(START, "n")
    graph = g.compile()
    assert branch_view(graph, "t", None, "t~agentdebug-x") is graph


def _loop_passes(graph: Any, store: Any, dbg: AgentDebug) -> Any:
    cb = AgentDebugCallback(dbg, success_check=remembered_right)
    graph.invoke(
        {"messages": [HumanMessage("I am allergic to peanuts")]},
        {"callbacks": [cb], "configurable": {"thread_id": "t1"}},
        context=User("u1"),
    )
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=remembered_right)
    return closed_loop(cb.trajectory(), debugger=dbg, executor=executor, policy="auto")


def test_a_sqlite_store_dated_by_the_second_hides_the_runs_later_writes_too(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """SQLite dates an item to the second (CURRENT_TIMESTAMP): the run's write made in
    the fork's own second is after the fork (before, the branch read it, and the
    corrected step failed)."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(tmp_path / "memories.db", check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    time.sleep(1.02 - time.time() % 1)  # (the run's steps in one second of the clock)
    result = _loop_passes(memory_graph(store), store, dbg)
    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert memories(store) == ["memory: likes peanuts"]  # type: ignore[arg-type]


def test_a_put_with_a_ttl_runs_in_a_branch(dbg: AgentDebug) -> None:
    """A node that writes with a TTL (``store.put(..., ttl=30)``) ran in the run; its
    branch refused it (NotImplementedError: TTL is not supported)."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, ttl={"default_ttl": 60})
    store.setup()
    graph = memory_graph(store, ttl=30.0)
    result = _loop_passes(graph, store, dbg)
    assert result.status == "succeeded" and result.verified_by_rerun is True


class Keywords:
    """Embeddings that count two words: a search for "peanuts" ranks what names them."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        said = text.lower()
        return [float(said.count("peanut")), float(said.count("dog")), 0.01]


def test_the_branchs_own_write_is_ranked_with_the_stores_in_a_semantic_search() -> None:
    """With an index, a search by query ranks the branch's own writes with the
    store's matches (before, they came after every match, unranked)."""
    from langchain_core.embeddings import Embeddings

    class Embedded(Keywords, Embeddings):
        pass

    base = InMemoryStore(index={"dims": 3, "embed": Embedded(), "fields": ["text"]})
    base.put(("m",), "old", {"text": "likes dogs"})
    view = BranchStore(base, datetime.now(UTC))
    view.put(("m",), "new", {"text": "allergic to peanuts"})
    (top,) = view.search(("m",), query="peanuts", limit=1)
    assert top.key == "new"
    assert base.get(("m",), "new") is None


def test_a_branch_of_a_branch_in_another_process_reads_the_store_as_the_first_did() -> None:
    """The first branch's view is gone with its process: the second reads the store
    as of the time the first read it (recorded on the branch), not as of its own
    fork, which came after the run's later writes."""
    base = InMemoryStore()
    graph = memory_graph(base)
    first_read = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    base.put(("notes",), "later", {"text": "the run wrote this after the first fork"})
    fork = datetime.now(UTC).isoformat()
    view = branch_view(graph, "t1~agentdebug-gone", fork, "t1~agentdebug-c", first_read).store
    assert view.search(("notes",)) == []


def test_a_memory_written_just_before_the_fork_in_the_same_second_is_read(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """SqliteStore, the reader blamed: ``remember`` wrote in the fork's own second,
    before the fork; only nodes before the fork, and the one after it, ran in that
    second, so the store cannot say; the branch reads the item (a review's find: a
    first fix hid every write of the fork's second, and the corrected step failed).
    The run's later write in that second stays hidden where only nodes after the
    fork ran then (the test above)."""
    import sqlite3

    from agentdebug.schema import RerunRequest
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(tmp_path / "m.db", check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()

    def remember(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        runtime.store.put(("mem",), "a", {"text": "allergic to peanuts"})
        return {"messages": [AIMessage("noted")]}

    def suggest(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        held = " ".join(item.value["text"] for item in runtime.store.search(("mem",)))
        fixed = any("allergies" in str(m.content) for m in state["messages"])
        said = "Try the tofu curry." if fixed and "allergic" in held else "Try the satay."
        return {"messages": [AIMessage(said)]}

    g = StateGraph(MessagesState, context_schema=User)
    g.add_node("remember", remember)
    g.add_node("suggest", suggest)
    g.add_edge(START, "remember")
    g.add_edge("remember", "suggest")
    graph = g.compile(checkpointer=InMemorySaver(), store=store)

    def safe(state: dict[str, Any]) -> bool | str:
        return "tofu" in str(state["messages"][-1].content) or "suggested satay"

    cb = AgentDebugCallback(dbg, success_check=safe, diagnose=False)
    time.sleep(1.02 - time.time() % 1)  # (the run's steps in one second of the clock)
    config: Any = {"callbacks": [cb], "configurable": {"thread_id": "t2"}}
    graph.invoke({"messages": [HumanMessage("dinner idea?")]}, config, context=User("u1"))
    run = cb.trajectory()
    step = next(e.step_index for e in run.events if e.agent_name == "suggest")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=safe)
    branch = executor.rerun(
        RerunRequest(trajectory=run, resume_step=step, directive="check the allergies held")
    )
    assert branch.outcome.final_answer == "Try the tofu curry."
