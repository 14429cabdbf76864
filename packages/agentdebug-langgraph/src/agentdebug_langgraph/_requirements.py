"""What a rerun needs of a graph before it forks one: a compiled ``StateGraph`` (a
fork is a state update before a node) with a checkpointer that kept the run's
state, refused with a message that says what to change."""

from __future__ import annotations

from typing import Any

from agentdebug.errors import AgentDebugError
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

HOW_TO_CHECKPOINT = (
    "compile the graph with a checkpointer and give each run a thread id, e.g. "
    "graph = builder.compile(checkpointer=InMemorySaver()) (or SqliteSaver from "
    "langgraph-checkpoint-sqlite, to rerun stored runs from another process) and "
    "graph.invoke(inputs, config={'configurable': {'thread_id': '...'}, "
    "'callbacks': [AgentDebugCallback()]})"
)


def require_state_graph(graph: Any, run_id: str, factory: str | None = None) -> None:
    """A fork is a state update before a node: a ``StateGraph``'s (the prebuilt
    agent is one). A functional-API entrypoint is one node whose tasks run inside
    it, so there is no checkpoint before a task to fork from. ``factory``: the
    recorded graph factory that made ``graph``, named in the refusal."""
    if isinstance(graph, CompiledStateGraph):
        return
    if not isinstance(graph, Pregel):
        made = f"the graph its factory '{factory}' returned" if factory else "the graph given"
        raise AgentDebugError(
            f"cannot rerun run '{run_id}': {made} "
            f"is {_a(type(graph).__name__)}, not a compiled LangGraph graph "
            "(StateGraph(...).compile(checkpointer=...))"
        )
    called = f"'{getattr(graph, 'name', None) or type(graph).__name__}'"
    nodes = list(getattr(graph, "nodes", None) or ())
    if called == "'LangGraph'" and len(nodes) == 1:  # (an entrypoint: by its function)
        called = f"'{nodes[0]}' (an @entrypoint)"
    raise AgentDebugError(
        f"cannot rerun run '{run_id}' from a checkpoint: {called} is a "
        f"{type(graph).__name__}, not a compiled StateGraph, and a rerun forks a "
        "StateGraph's state before the blamed node. A functional-API entrypoint "
        "(@entrypoint) runs as one node, with its tasks inside it, so LangGraph keeps "
        "no checkpoint before a task; call the entrypoint again with a corrected input"
    )


def require_checkpointer(
    graph: Any, run_id: str, factory: str | None = None, *, saved: bool = True
) -> None:
    """Refuse a graph without a checkpointer to fork from. ``saved``: whether the
    run itself recorded checkpoints (one captured without a checkpointer did not,
    and no graph can restore what was never kept)."""
    saver = getattr(graph, "checkpointer", None)
    name = getattr(graph, "name", None) or type(graph).__name__
    if (saver is None or saver is False or saver is True) and not saved:
        if graph is None:  # (a factory not called: what it builds cannot restore this run)
            also = (
                f" (a checkpointer its graph factory '{factory}' gives a graph now holds "
                "nothing of this run)"
                if factory
                else ""
            )
        else:
            made = (
                f"its graph factory '{factory}' returns a graph"
                if factory
                else f"graph '{name}' is"
            )
            also = f" (and {made} compiled without one)"
        raise AgentDebugError(
            f"cannot rerun run '{run_id}' from a checkpoint: the run was recorded with "
            f"no checkpointer, so LangGraph kept no state to restore{also}. To rerun later "
            f"runs: {HOW_TO_CHECKPOINT}"
        )
    if (saver is None or saver is False or saver is True) and factory:
        raise AgentDebugError(  # (another process forks only what a persistent saver kept)
            f"cannot rerun run '{run_id}': its graph factory '{factory}' returns a graph "
            "without a checkpointer, so it cannot read the checkpoints the run saved. "
            "Compile it with the persistent checkpointer the run used, e.g. "
            "SqliteSaver(sqlite3.connect('checkpoints.db', check_same_thread=False)) "
            "from langgraph-checkpoint-sqlite, on the same file"
        )
    if saver is None or saver is False or saver is True:
        raise AgentDebugError(
            f"cannot rerun run '{run_id}' from a checkpoint: graph '{name}' has no "
            f"checkpointer, so LangGraph kept no state to restore. To fix: {HOW_TO_CHECKPOINT}"
        )
    kind = type(saver)
    if kind.__module__.endswith(".aio") or kind.__name__.startswith("Async"):
        # its synchronous methods refuse its own event loop, and its connection
        # belongs to that loop, which the branch (run on a loop of its own) is not
        raise AgentDebugError(
            f"cannot rerun run '{run_id}': graph '{name}' uses {kind.__name__}, which "
            "works only on the event loop that opened it, and a rerun reads, copies and "
            "forks checkpoints synchronously. Give the executor the same graph built with "
            "the synchronous saver on the same database (for SQLite: "
            "SqliteSaver(sqlite3.connect(path, check_same_thread=False)); the branch of "
            "a run made with ainvoke then runs through AsyncSqliteSaver on that file)"
        )


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
