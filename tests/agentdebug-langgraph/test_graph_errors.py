"""Errors LangGraph raises between nodes (no node is running): each is placed at the
node it concerns, with the failure mode it is, and the diagnosis says so."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from agentdebug_langgraph._checkpoints import resume_point
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError, InvalidUpdateError
from langgraph.graph import START, StateGraph
from lg_graphs import call, scripted, tool_agent
from pydantic import BaseModel, ValidationError


class Tally(BaseModel):
    count: int
    note: str = ""


class Counted(TypedDict):
    n: int


class Gathered(TypedDict):
    got: Annotated[list[int], operator.add]


def failed(app: Any, inputs: Any, error: type[BaseException], **config: Any) -> AgentDebugCallback:
    cb = AgentDebugCallback(AgentDebug())
    with pytest.raises(error):
        app.invoke(inputs, {"callbacks": [cb], **config})
    return cb


def the_error(run: AgentTrajectory) -> Any:
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    return error


def start_of(run: AgentTrajectory, node: str) -> Any:
    return [e for e in run.events if e.type is EventType.AGENT_START and e.agent_name == node][-1]


def test_an_input_the_state_schema_refuses_is_the_inputs_fault() -> None:
    g = StateGraph(Tally)
    g.add_node("bump", lambda s: {"count": s.count + 1})
    g.add_edge(START, "bump")
    cb = failed(g.compile(), {"count": "many"}, ValidationError)
    run = cb.trajectory()
    error = the_error(run)
    (given,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert (error.agent_name, error.step_index, error.parent_id) == (None, 0, given.id)
    assert error.metadata["langgraph_error"] == "invalid_state"
    assert error.metadata["fields"] == ["count"]
    assert error.metadata["before_node"] == "bump"
    assert error.metadata["written_by"] == "input"
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.mode_id == "system.schema_violation"
    assert "Most likely root cause: the run's input at the same step" in report.summary
    assert "malformed tool call" not in report.summary


def test_the_closed_loop_does_not_rerun_a_run_whose_input_is_at_fault(dbg: AgentDebug) -> None:
    g = StateGraph(Tally)
    g.add_node("bump", lambda s: {"count": s.count + 1})
    g.add_edge(START, "bump")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValidationError):
        graph.invoke({"count": "many"}, {"callbacks": [cb], "configurable": {"thread_id": "in"}})
    run = cb.trajectory()
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    result = closed_loop(run, debugger=dbg, executor=executor, report=cb.reports[0])
    assert result.status == "no_plan"
    assert result.detail is not None and "the root cause is the input of run" in result.detail
    with pytest.raises(AgentDebugError, match="stopped before its first node ran"):
        resume_point(run, 0)  # and asked directly, the executor says why it cannot


def test_invoking_with_no_input_on_a_new_thread_is_the_invocations_fault(dbg: AgentDebug) -> None:
    from langgraph.errors import EmptyInputError

    g = StateGraph(Tally)
    g.add_node("bump", lambda s: {"count": s.count + 1})
    g.add_edge(START, "bump")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    with pytest.raises(EmptyInputError):  # (a thread id mistyped when going on with a run)
        graph.invoke(None, {"callbacks": [cb], "configurable": {"thread_id": "nwe"}})
    run = cb.trajectory()
    error = the_error(run)
    (given,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert given.input is None and given.metadata["empty"] is True
    assert (error.agent_name, error.step_index, error.parent_id) == (None, 0, given.id)
    assert error.metadata["langgraph_error"] == "empty_input"
    (report,) = cb.reports
    assert "Most likely root cause: the run's input at the same step" in report.summary
    assert "unnamed agent" not in report.summary
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    result = closed_loop(run, debugger=dbg, executor=executor, report=report)
    assert result.status == "no_plan"
    # asked directly, the executor says why there is nothing to fork, and what to do
    with pytest.raises(AgentDebugError) as refused:
        executor.preflight(run)
    said = str(refused.value)
    assert "no node of it ran (the graph raised EmptyInputError first)" in said
    assert "with the thread id of the run to continue" in said
    assert "InMemorySaver a graph factory makes" not in said
    # a graph a node goes on with so (a sub-agent's thread that is not there): the
    # node's error, at its step, not the run's input
    inner = g.compile(checkpointer=InMemorySaver())
    outer = StateGraph(Tally)
    outer.add_node("lead", lambda s: inner.invoke(None, {"configurable": {"thread_id": "gone"}}))
    outer.add_edge(START, "lead")
    nested = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(EmptyInputError):
        outer.compile().invoke({"count": 0}, {"callbacks": [nested]})
    error = the_error(nested.trajectory())
    assert (error.agent_name, error.step_index) == ("lead", 1)
    assert "langgraph_error" not in error.metadata


def test_a_value_a_node_wrote_that_the_state_schema_refuses_blames_that_node() -> None:
    g = StateGraph(Tally)
    g.add_node("parse", lambda s: {"count": "twelve", "note": "parsed"})
    g.add_node("bump", lambda s: {"count": s.count + 1})
    g.add_edge(START, "parse")
    g.add_edge("parse", "bump")
    cb = failed(g.compile(), {"count": 1}, ValidationError)
    run = cb.trajectory()
    error = the_error(run)
    parse = start_of(run, "parse")
    assert (error.agent_name, error.step_index, error.parent_id) == ("parse", 1, parse.id)
    assert error.metadata["nodes"] == ["parse"] and error.metadata["before_node"] == "bump"
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("parse", 1)
    assert report.root_cause.mode_id == "system.schema_violation"


def test_a_step_timeout_blames_the_node_that_was_too_slow() -> None:
    def slow(state: Gathered) -> dict[str, Any]:
        time.sleep(0.4)
        return {"got": [1]}

    g = StateGraph(Gathered)
    g.add_node("fast", lambda s: {"got": [2]})
    g.add_node("slow", slow)
    g.add_edge(START, "fast")
    g.add_edge(START, "slow")
    app = g.compile()
    app.step_timeout = 0.1
    cb = failed(app, {"got": []}, TimeoutError)
    run = cb.trajectory()
    error = the_error(run)
    slow_start = start_of(run, "slow")
    assert (error.agent_name, error.parent_id) == ("slow", slow_start.id)
    assert error.metadata["langgraph_error"] == "step_timeout"
    assert error.metadata["step_timeout"] == 0.1
    assert error.metadata["nodes"] == ["slow"]  # fast finished within the limit
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "slow"
    assert report.root_cause.mode_id == "system.timeout"


def test_a_timeout_that_is_not_a_step_timeout_is_blamed_on_no_node() -> None:
    class SlowSaver(InMemorySaver):
        def put(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("metadata", args[2] if len(args) > 2 else {}).get("step", 0) >= 1:
                raise TimeoutError("the checkpoint store did not answer")
            return super().put(*args, **kwargs)

    g = StateGraph(Counted)
    g.add_node("work", lambda s: {"n": 1})
    g.add_edge(START, "work")
    cb = failed(
        g.compile(checkpointer=SlowSaver()),
        {"n": 0},
        TimeoutError,
        configurable={"thread_id": "t"},
        durability="sync",
    )
    error = the_error(cb.trajectory())
    assert error.agent_name is None and "langgraph_error" not in error.metadata


def test_the_recursion_limit_blames_the_node_whose_model_kept_the_loop_going() -> None:
    calls = [call("lookup_order", {"order_id": str(i)}, f"c{i}") for i in range(20)]
    cb = failed(
        tool_agent(scripted(calls)), {"messages": []}, GraphRecursionError, recursion_limit=5
    )
    run = cb.trajectory()
    error = the_error(run)
    assert error.metadata["langgraph_error"] == "recursion_limit"
    agent = start_of(run, "agent")
    assert (error.agent_name, error.step_index, error.parent_id) == (
        "agent",
        agent.step_index,
        agent.id,
    )
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "agent"
    assert report.root_cause.mode_id == "planning.step_limit_exhausted"


@pytest.mark.parametrize("check_passes", [True, False])
def test_a_prebuilt_agent_out_of_steps_is_an_error_only_where_the_check_fails(
    dbg: AgentDebug, check_passes: bool
) -> None:
    """The prebuilt agent ends itself when its steps run out ("Sorry, need more
    steps..."): with a success check that passes on that state, the run is a
    success with no error event in it; with one that fails, the step-limit error
    is at the agent step that said it, and it is the diagnosis's cause."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from lg_graphs import prebuilt_agent, weather

    class Asker(BaseChatModel):
        """Asks for the weather again, every turn."""

        @property
        def _llm_type(self) -> str:
            return "asker"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> Any:
            msg = call("weather", {"city": "Paris"}, f"w{len(messages)}")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    graph = prebuilt_agent(Asker(), (weather,))
    cb = AgentDebugCallback(
        dbg, success_check=lambda state: True if check_passes else "no forecast given"
    )
    out = graph.invoke(
        {"messages": [HumanMessage("Weather in Paris?")]},
        {"callbacks": [cb], "recursion_limit": 6},
    )
    assert out["messages"][-1].content == "Sorry, need more steps to process this request."
    run = cb.trajectory()
    errors = [e for e in run.events if e.type is EventType.ERROR]
    if check_passes:
        assert run.outcome.status is OutcomeStatus.SUCCESS
        assert errors == [] and cb.reports == []
        return
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.reason == "no forecast given"
    (error,) = errors
    assert error.metadata["failure_mode"] == "planning.step_limit_exhausted"
    assert (error.agent_name, error.step_index) == ("agent", start_of(run, "agent").step_index)
    (report,) = cb.reports
    assert report.root_cause is not None
    assert report.root_cause.mode_id == "planning.step_limit_exhausted"
    assert "agent stopped: the agent ran out of steps" in report.summary
    assert "raised" not in report.summary


def test_two_nodes_writing_a_key_that_holds_one_value_are_named() -> None:
    g = StateGraph(Counted)
    g.add_node("a", lambda s: {"n": 1})
    g.add_node("b", lambda s: {"n": 2})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    cb = failed(g.compile(), {"n": 0}, InvalidUpdateError)
    run = cb.trajectory()
    error = the_error(run)
    assert error.metadata["langgraph_error"] == "concurrent_update"
    assert error.metadata["key"] == "n"
    assert sorted(error.metadata["nodes"]) == ["a", "b"]
    assert error.agent_name in {"a", "b"}
    (report,) = cb.reports
    assert report.root_cause is not None
    assert report.root_cause.agent_name in {"a", "b"}
    assert report.root_cause.mode_id == "system.schema_violation"


def test_a_subgraphs_recursion_limit_blames_its_node_not_the_node_running_it(
    dbg: AgentDebug,
) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    model = GenericFakeChatModel(messages=iter([AIMessage(f"draft {i}") for i in range(20)]))
    sub = StateGraph(MessagesState)
    sub.add_node("prep", lambda s: {})
    sub.add_node("think", lambda s: {"messages": [model.invoke(s["messages"])]})
    sub.add_edge(START, "prep")
    sub.add_edge("prep", "think")
    sub.add_edge("think", "think")  # never done
    g = StateGraph(MessagesState)
    g.add_node("agent", sub.compile())
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        g.compile().invoke(
            {"messages": [HumanMessage("go")]}, {"callbacks": [cb], "recursion_limit": 4}
        )
    run = cb.trajectory()
    error = the_error(run)  # once: the top-level graph's is the same error
    think = start_of(run, "agent/think")
    assert (error.agent_name, error.parent_id) == ("agent/think", think.id)
    assert error.metadata["langgraph_error"] == "recursion_limit"
    assert error.metadata["node"] == "agent"  # the node it came out of
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "agent/think"
    assert report.root_cause.mode_id == "planning.step_limit_exhausted"


def test_an_error_of_one_send_branchs_subgraph_is_placed_in_that_branch(dbg: AgentDebug) -> None:
    """Two Send branches run the same subgraph node at once; only one of them has two
    nodes writing a one-value key in a step."""
    from langgraph.types import Send

    class Part(TypedDict, total=False):
        which: str
        k: str

    def slow(name: str) -> Any:
        def write(state: Part) -> dict[str, Any]:
            time.sleep(0.2)
            return {"k": name}

        return write

    sg = StateGraph(Part)
    sg.add_node("w1", slow("w1"))
    sg.add_node("w2", slow("w2"))
    sg.add_node("pre", lambda s: (time.sleep(0.05), {"which": "B"})[1])
    sg.add_node("w3", lambda s: {"k": "w3"})
    sg.add_conditional_edges(
        START, lambda s: ["w1", "w2"] if s["which"] == "A" else ["pre"], ["w1", "w2", "pre"]
    )
    sg.add_edge("pre", "w3")
    g = StateGraph(Gathered)
    g.add_node("sub", sg.compile())
    g.add_conditional_edges(
        START, lambda s: [Send("sub", {"which": "A"}), Send("sub", {"which": "B"})], ["sub"]
    )
    cb = AgentDebugCallback(dbg)
    with pytest.raises(InvalidUpdateError):
        g.compile().invoke({"got": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    error = the_error(run)
    assert error.agent_name in {"sub/w1", "sub/w2"}
    assert sorted(error.metadata["nodes"]) == ["w1", "w2"]
    by_id = {e.id: e for e in run.events}
    branch = by_id[by_id[error.parent_id].parent_id]  # the sub node the writers ran in
    assert branch.input == {"which": "A"}


def test_a_command_to_a_node_the_graph_does_not_have_is_an_error_at_the_router(
    dbg: AgentDebug,
) -> None:
    """A supervisor routes by its model's word: ``Command(goto="billing")`` in a
    graph without that node. LangGraph logs "unknown channel" and ends the run as
    if no route was given; the run records the route as an error at the router,
    ``coordination.unknown_handoff``, and the diagnosis blames it (before, nothing
    was recorded, and the blame fell on the first decision by default)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState
    from langgraph.types import Command

    model = scripted([AIMessage(w) for w in ("billing", "support", "billing")])  # (a run each)

    def supervisor(state: MessagesState) -> Command[Any]:
        said = model.invoke(state["messages"])
        return Command(goto=str(said.content), update={"messages": [said]})

    g = StateGraph(MessagesState)
    g.add_node("supervisor", supervisor, destinations=("support", "sales"))
    g.add_node("support", lambda s: {"messages": [AIMessage("Your bill was corrected.")]})
    g.add_node("sales", lambda s: {})
    g.add_edge(START, "supervisor")
    cb = AgentDebugCallback(dbg, success_check=lambda s: "the customer was not helped")
    g.compile().invoke({"messages": [HumanMessage("my bill is wrong")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.agent_name == "supervisor" and error.metadata["target"] == "billing"
    assert error.error is not None and "names no node of the graph" in error.error.message
    report = cb.reports[0]
    root = report.root_cause
    assert root is not None and root.agent_name == "supervisor"
    assert root.mode_id == "coordination.unknown_handoff"
    # a route to a node it has is no error
    ok = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke({"messages": [HumanMessage("my bill is wrong")]}, {"callbacks": [ok]})
    assert not [e for e in ok.trajectory().events if e.type is EventType.ERROR]
    # with no success check, the dropped route is the run's failure (and diagnosed)
    unchecked = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("my bill is wrong")]}, {"callbacks": [unchecked]})
    lost = unchecked.trajectory()
    assert lost.outcome.status is OutcomeStatus.FAILURE
    assert "routed to 'billing', which is no node of the graph" in (lost.outcome.reason or "")
    root = unchecked.reports[0].root_cause
    assert root is not None and root.agent_name == "supervisor"


def test_a_handoff_up_to_a_node_the_parent_graph_does_not_have_is_an_error_too(
    dbg: AgentDebug,
) -> None:
    """A subgraph's node hands off with ``Command(goto=..., graph=Command.PARENT)``
    to a node the parent lacks. LangGraph hands the command to the parent's node
    running the subgraph and ignores the route as for its own; the run is not a
    success (before, it was, with no error)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState
    from langgraph.types import Command

    def classify(state: MessagesState) -> Command[Any]:
        said = AIMessage("bogus")
        return Command(goto=str(said.content), graph=Command.PARENT, update={"messages": [said]})

    sub = StateGraph(MessagesState)
    sub.add_node("classify", classify)
    sub.add_edge(START, "classify")
    g = StateGraph(MessagesState)
    g.add_node("triage", sub.compile(), destinations=("billing",))
    g.add_node("billing", lambda s: {"messages": [AIMessage("Your invoice is 120 EUR.")]})
    g.add_edge(START, "triage")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("invoice total?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert "triage routed to 'bogus', which is no node of the graph" in (run.outcome.reason or "")
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.agent_name == "triage" and error.metadata["target"] == "bogus"
    # a Send to a node the graph lacks too (LangGraph: "Ignoring unknown node name")
    from langgraph.types import Send

    sends = StateGraph(MessagesState)
    sends.add_node(
        "fan", lambda s: Command(goto=[Send("bogus", {"messages": []})], update={"messages": []})
    )
    sends.add_edge(START, "fan")
    sent = AgentDebugCallback(dbg)
    sends.compile().invoke({"messages": [HumanMessage("go")]}, {"callbacks": [sent]})
    assert sent.trajectory().outcome.status is OutcomeStatus.FAILURE
    (error,) = [e for e in sent.trajectory().events if e.type is EventType.ERROR]
    assert error.agent_name == "fan" and error.metadata["target"] == "bogus"
    # a handoff up to a node the parent has is no error
    sub2 = StateGraph(MessagesState)
    sub2.add_node(
        "classify", lambda s: Command(goto="billing", graph=Command.PARENT, update={"messages": []})
    )
    sub2.add_edge(START, "classify")
    g2 = StateGraph(MessagesState)
    g2.add_node("triage", sub2.compile(), destinations=("billing",))
    g2.add_node("billing", lambda s: {"messages": [AIMessage("Your invoice is 120 EUR.")]})
    g2.add_edge(START, "triage")
    ok = AgentDebugCallback(dbg, diagnose=False)
    g2.compile().invoke({"messages": [HumanMessage("invoice total?")]}, {"callbacks": [ok]})
    assert ok.trajectory().outcome.status is OutcomeStatus.SUCCESS
    assert not [e for e in ok.trajectory().events if e.type is EventType.ERROR]


def test_a_handoff_two_levels_down_and_a_subgraphs_own_route_are_judged_by_their_graph(
    dbg: AgentDebug,
) -> None:
    """A node two subgraphs down hands off with ``Command.PARENT`` to a node its
    parent subgraph lacks: LangGraph hands the command to the node running it and
    ignores the route, as at the root; the subgraph's own nodes judge it (before,
    only a root node's route was, and this run read as a success). A subgraph
    node's own route to a node of its subgraph is no error, nor is a handoff up to
    one."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState
    from langgraph.types import Command

    def nested(goto: str, graph: Any = Command.PARENT) -> Any:
        inner = StateGraph(MessagesState)
        inner.add_node(
            "classify",
            lambda s: Command(goto=goto, graph=graph, update={"messages": [AIMessage(goto)]}),
        )
        inner.add_edge(START, "classify")
        mid = StateGraph(MessagesState)
        mid.add_node("triage", inner.compile(), destinations=("billing",))
        mid.add_node("billing", lambda s: {"messages": [AIMessage("Your invoice is 120 EUR.")]})
        mid.add_edge(START, "triage")
        top = StateGraph(MessagesState)
        top.add_node("desk", mid.compile())
        top.add_edge(START, "desk")
        return top.compile()

    cb = AgentDebugCallback(dbg)
    nested("bogus").invoke({"messages": [HumanMessage("invoice total?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert "desk/triage routed to 'bogus', which is no node of the subgraph desk" in (
        run.outcome.reason or ""
    )
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.agent_name == "desk/triage" and error.metadata["target"] == "bogus"
    assert "its nodes: billing, triage" in (error.error.message if error.error else "")
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == "desk/triage"

    # a subgraph's node routing within its own subgraph, to a node it lacks
    lost = AgentDebugCallback(dbg, diagnose=False)
    nested("nowhere", graph=None).invoke({"messages": [HumanMessage("x")]}, {"callbacks": [lost]})
    (error,) = [e for e in lost.trajectory().events if e.type is EventType.ERROR]
    assert error.agent_name == "desk/triage/classify" and error.metadata["target"] == "nowhere"
    assert "no node of the subgraph desk/triage (its nodes: classify)" in (
        error.error.message if error.error else ""
    )

    fine = AgentDebugCallback(dbg, diagnose=False)
    out = nested("billing").invoke({"messages": [HumanMessage("x")]}, {"callbacks": [fine]})
    assert out["messages"][-1].content == "Your invoice is 120 EUR."
    assert fine.trajectory().outcome.status is OutcomeStatus.SUCCESS
    assert not [e for e in fine.trajectory().events if e.type is EventType.ERROR]
