"""What a node runs with callbacks of its own, and a run given two callbacks: a
model call made with ``config={"callbacks": [...]}`` (which replaces the graph's)
is still recorded under its node, and two ``AgentDebugCallback`` instances in one
run's callbacks record it once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.store import RunQuery
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackHandler, CallbackManager
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph


class Counter(BaseCallbackHandler):
    """A token counter a node gives its model call (LangChain's run-time callbacks)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1


def counted_graph(counter: Counter, how: str = "own", coroutine: bool = False) -> Any:
    """Two nodes that call their model with the counter as its callbacks: alone
    (``config={"callbacks": [counter]}``), or over the node's config
    (``{**config, "callbacks": [counter]}``), or with metadata of its own too
    (``{"callbacks": [counter], "metadata": {...}}``, as Langfuse's docs pass a
    handler: the node's namespace replaced): either way the graph's are replaced.
    With ``coroutine``, the second node is a coroutine (the graph run by ainvoke)."""

    def talk(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("Order A123 costs $42.")]))
        own: Any = {
            "own": {"callbacks": [counter]},
            "over": {**config, "callbacks": [counter]},
            "metadata": {"callbacks": [counter], "metadata": {"user": "u1"}},
        }[how]
        return {"messages": [model.invoke(state["messages"], config=own)]}

    async def atalk(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("Order A123 costs $42.")]))
        reply = await model.ainvoke(state["messages"], config={"callbacks": [counter]})
        return {"messages": [reply]}

    g = StateGraph(MessagesState)
    g.add_node("talk", talk)
    g.add_node("again", atalk if coroutine else talk)
    g.add_edge(START, "talk")
    g.add_edge("talk", "again")
    return g.compile()


def model_calls(run: Any) -> list[tuple[str | None, int, Any]]:
    return [
        (e.agent_name, e.step_index, e.output["content"])
        for e in run.events
        if e.type is EventType.LLM_RESPONSE
    ]


@pytest.mark.parametrize("how", ["own", "over", "metadata"])
def test_a_model_call_given_its_own_callbacks_is_recorded_under_its_node(
    dbg: AgentDebug, how: str
) -> None:
    """Before, the run held no model call at all: the answers read as the nodes'
    own words. The node's own handler still sees the call."""
    counter = Counter()
    cb = AgentDebugCallback(dbg)
    asked: Any = {"messages": [HumanMessage("price of A123?")]}
    asyncio.run(counted_graph(counter, how, True).ainvoke(asked, {"callbacks": [cb]}))
    counted_graph(counter, how).invoke(asked, {"callbacks": [cb]})
    for run_id in cb.run_ids:
        run = cb.trajectory(run_id)
        assert model_calls(run) == [
            ("talk", 1, "Order A123 costs $42."),
            ("again", 2, "Order A123 costs $42."),
        ]
        (first,) = [e for e in run.events if e.type is EventType.LLM_RESPONSE][:1]
        assert first.input == [{"role": "user", "content": "price of A123?"}]
    assert counter.calls == 4


def test_a_graph_run_after_a_recorded_one_is_not_recorded_by_it(dbg: AgentDebug) -> None:
    """The callback is added to what LangChain builds inside its run only while the
    run goes on: a stream left early, and a graph invoked afterwards in the same
    context without callbacks, is not recorded by it."""
    counter = Counter()
    cb = AgentDebugCallback(dbg)
    graph = counted_graph(counter)
    stream = graph.stream({"messages": [HumanMessage("price?")]}, {"callbacks": [cb]})
    next(stream)
    stream.close()  # (the run ends here, stopped)
    graph.invoke({"messages": [HumanMessage("price again?")]})
    dbg.flush()
    assert dbg.store is not None
    assert len(dbg.store.list_runs(RunQuery(limit=10))) == 1
    assert len(cb.run_ids) == 1


def test_two_callbacks_in_one_run_record_it_once_and_say_so(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    """One instance given to ``with_config``, another to ``invoke`` (a shared
    helper's and the app's own): one run, one diagnosis, one note on the
    exception, and a warning, once, that says which one's options are not used
    (before: two runs, two diagnoses, two notes)."""

    def fail(state: MessagesState) -> dict[str, Any]:
        raise ValueError("card declined")

    g = StateGraph(MessagesState)
    g.add_node("pay", fail)
    g.add_edge(START, "pay")
    first = AgentDebugCallback(dbg)
    second = AgentDebugCallback(dbg, success_check=lambda state: True)
    bound = g.compile().with_config(callbacks=[first])
    with caplog.at_level(logging.WARNING, logger="agentdebug.langgraph"):
        for _ in range(2):
            with pytest.raises(ValueError, match="card declined") as raised:
                bound.invoke({"messages": [HumanMessage("pay")]}, {"callbacks": [second]})
            notes = [n for n in raised.value.__notes__ if "agentdebug diagnosis" in n]
            assert len(notes) == 1
    (warning,) = [
        r.getMessage() for r in caplog.records if "two AgentDebugCallback" in r.getMessage()
    ]
    assert "recorded once, by the first" in warning
    assert "this one's options are not used for it: its store, success_check" in warning
    assert dbg.store is not None
    runs = dbg.store.list_runs(RunQuery(limit=10))
    assert [r.status for r in runs] == [OutcomeStatus.FAILURE.value] * 2
    recorded = first.run_ids + second.run_ids
    assert len(recorded) == 2 and len(set(recorded)) == 2


@pytest.mark.parametrize("instrumented", [False, True], ids=["alone", "with-instrument"])
def test_a_callback_given_in_a_callback_manager_records_the_nodes(
    dbg: AgentDebug, instrumented: bool
) -> None:
    """``config={"callbacks": CallbackManager(handlers=[cb])}`` gives a handler the
    nodes do not inherit: LangChain calls it for the graph's start and end only.
    The run holds its nodes and model calls all the same (before: the input and the
    final state only, read as a success with no step; under ``instrument()`` too,
    which does not add its handler beside one of its class)."""
    from agentdebug_langgraph import instrument

    if instrumented:
        instrument(dbg)
    cb = AgentDebugCallback(dbg)
    asked: Any = {"messages": [HumanMessage("price of A123?")]}
    counted_graph(Counter()).invoke(asked, {"callbacks": CallbackManager(handlers=[cb])})
    asyncio.run(
        counted_graph(Counter(), coroutine=True).ainvoke(
            asked, {"callbacks": AsyncCallbackManager(handlers=[cb])}
        )
    )
    for run_id in cb.run_ids:
        run = cb.trajectory(run_id)
        starts = [e.agent_name for e in run.events if e.type is EventType.AGENT_START]
        assert starts == ["talk", "again"]
        assert [a for a, _, _ in model_calls(run)] == ["talk", "again"]
    assert len(cb.run_ids) == 2


def test_what_an_app_runs_while_it_reads_a_recorded_stream_is_not_recorded(
    dbg: AgentDebug,
) -> None:
    """An app's loop over a recorded stream runs another graph and its own model
    call for each chunk, with no callbacks; a worker thread whose stream was left
    open serves the next request: none of that is recorded by the stream's callback
    (the run is held in the context while it goes on, for the hook to add the
    callback to what the run's nodes build, not to what the app does beside it)."""
    from concurrent.futures import ThreadPoolExecutor

    cb = AgentDebugCallback(dbg, diagnose=False)
    graph, other = counted_graph(Counter()), counted_graph(Counter())
    asked: Any = {"messages": [HumanMessage("price of A123?")]}
    for _chunk in graph.stream(asked, {"callbacks": [cb]}, stream_mode="updates"):
        GenericFakeChatModel(messages=iter([AIMessage("fine")])).invoke("is this chunk fine?")
        other.invoke(asked)
    assert len(cb.run_ids) == 1
    assert [a for a, _, _ in model_calls(cb.trajectory())] == ["talk", "again"]
    left: list[Any] = []

    def streamed() -> None:
        stream = counted_graph(Counter()).stream(asked, {"callbacks": [cb]})
        next(stream)
        left.append(stream)  # (its client went away; not closed yet)

    with ThreadPoolExecutor(1) as worker:
        worker.submit(streamed).result()
        for _ in range(2):
            worker.submit(other.invoke, asked).result()
    dbg.flush()
    assert dbg.store is not None
    assert len(dbg.store.list_runs(RunQuery(limit=10))) == 2  # (the two streams' runs)


def test_two_default_callbacks_in_one_run_are_said_to_be_alike(
    _home: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Two ``AgentDebugCallback()`` with no options share the default store: the
    warning says the run is recorded once, and not that options go unused."""
    g = StateGraph(MessagesState)
    g.add_node("talk", lambda state: {"messages": [AIMessage("hi")]})
    g.add_edge(START, "talk")
    with caplog.at_level(logging.WARNING, logger="agentdebug.langgraph"):
        g.compile().invoke(
            {"messages": [HumanMessage("hello")]},
            {"callbacks": [AgentDebugCallback(), AgentDebugCallback()]},
        )
    (warning,) = [
        r.getMessage() for r in caplog.records if "two AgentDebugCallback" in r.getMessage()
    ]
    assert "recorded once, by the first; give one" in warning
