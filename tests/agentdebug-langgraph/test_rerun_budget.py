"""A branch of a run that stopped at its recursion limit gets what was left of the
limit, not a fresh one: it may not pass by running past where the run had to stop."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph


class Count(TypedDict, total=False):
    n: int
    stop: bool  # the fix a branch is given: a then ends the loop


def looping() -> Any:
    """a -> b -> a ... until n reaches 100 (which the run never does on its own)."""
    g = StateGraph(Count)
    g.add_node("a", lambda s: {"n": 100 if s.get("stop") else s.get("n", 0) + 1})
    g.add_node("b", lambda s: {})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_conditional_edges("b", lambda s: END if s.get("n", 0) >= 100 else "a", ["a", END])
    return g.compile(checkpointer=InMemorySaver())


def own_steps(branch: AgentTrajectory) -> list[int]:
    return [
        e.step_index
        for e in branch.events
        if e.type is EventType.AGENT_START and not e.metadata.get("inherited_from")
    ]


@pytest.fixture
def stopped(dbg: AgentDebug) -> tuple[Any, AgentTrajectory]:
    graph = looping()
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(GraphRecursionError):  # a1 b2 a3 b4 a5 b6 a7, then the limit
        graph.invoke(
            {"n": 0}, {"callbacks": [cb], "configurable": {"thread_id": "t"}, "recursion_limit": 7}
        )
    return graph, cb.trajectory()


def rerun(
    dbg: AgentDebug, graph: Any, run: AgentTrajectory, step: int, patch: Any
) -> AgentTrajectory:
    request = RerunRequest(trajectory=run, resume_step=step, directive="stop", state_patch=patch)
    return LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)


def test_a_branch_runs_the_super_steps_the_run_had_left_and_no_more(
    dbg: AgentDebug, stopped: tuple[Any, AgentTrajectory]
) -> None:
    graph, run = stopped
    branch = rerun(dbg, graph, run, 3, {"stop": False})
    assert own_steps(branch) == [3, 4, 5, 6, 7]  # as the run: steps 3 to 7, then the limit
    assert branch.outcome.error is not None and branch.outcome.error.type == "GraphRecursionError"
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["steps_left"] == 5 and fork["recursion_limit"] == 3


def test_a_branch_that_passes_within_what_was_left_passes(
    dbg: AgentDebug, stopped: tuple[Any, AgentTrajectory]
) -> None:
    graph, run = stopped
    branch = rerun(dbg, graph, run, 5, {"stop": True})  # a5 b6, then done
    assert own_steps(branch) == [5, 6]
    assert branch.outcome.status is OutcomeStatus.SUCCESS


def test_a_branch_that_passes_only_past_the_runs_limit_does_not_pass(
    dbg: AgentDebug, stopped: tuple[Any, AgentTrajectory]
) -> None:
    graph, run = stopped
    branch = rerun(dbg, graph, run, 7, {"stop": True})  # a7 b8: b is past the run's limit
    assert own_steps(branch) == [7, 8]
    assert branch.outcome.status is OutcomeStatus.FAILURE
    assert branch.outcome.reason == (
        "it finished only after 2 super-steps, and the run had 1 left under its recursion limit"
    )
    # the loop's next round, a branch of this branch, is kept to what was left too
    again = rerun(dbg, graph, branch, 7, {"stop": True})
    assert again.outcome.status is OutcomeStatus.FAILURE
    assert again.metadata["langgraph"]["fork"]["steps_left"] == 1
    # and from a step before that branch's fork (in the run's part of its history),
    # to what the run had left there
    earlier = rerun(dbg, graph, branch, 3, {"stop": False})
    assert earlier.metadata["langgraph"]["fork"]["steps_left"] == 5
    assert own_steps(earlier) == [3, 4, 5, 6, 7]


def test_a_limit_the_executor_is_given_is_used_as_it_is(
    dbg: AgentDebug, stopped: tuple[Any, AgentTrajectory]
) -> None:
    graph, run = stopped
    executor = LangGraphRerunExecutor(graph, debugger=dbg, config={"recursion_limit": 50})
    request = RerunRequest(
        trajectory=run, resume_step=7, directive="stop", state_patch={"stop": True}
    )
    branch = executor.rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert "steps_left" not in branch.metadata["langgraph"]["fork"]


@pytest.mark.parametrize("heeds", [False, True])
def test_a_prebuilt_agent_that_ran_out_of_steps_fails_and_its_branch_keeps_to_the_budget(
    dbg: AgentDebug, heeds: bool
) -> None:
    """The prebuilt agent meets the recursion limit itself (``RemainingSteps``): it
    answers "Sorry, need more steps..." and the graph raises nothing. That is the
    run's failure, placed at the agent step that said it; and a branch gets what
    was left of the limit, so a model that ignores the directive (it needs more
    pages than the run had steps for) does not pass by being given more steps."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from lg_graphs import prebuilt_agent
    from rerun_support import one_round

    @tool
    def fetch_page(n: int) -> str:
        """Fetch page n of the report."""
        return f"page {n} of 4"

    class Pager(BaseChatModel):
        """Reads pages 1 to 4, then summarises; one told to (a second user
        message: the directive), ``heeds``, skips page 1."""

        @property
        def _llm_type(self) -> str:
            return "pager"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            done = sum(isinstance(m, ToolMessage) for m in messages)
            if heeds and sum(isinstance(m, HumanMessage) for m in messages) > 1:
                done += 1
            msg = (
                AIMessage(
                    "",
                    tool_calls=[{"name": "fetch_page", "args": {"n": done + 1}, "id": f"p{done}"}],
                )
                if done < 4
                else AIMessage("Summary done.")
            )
            return ChatResult(generations=[ChatGeneration(message=msg)])

    graph = prebuilt_agent(Pager(), (fetch_page,), InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config: Any = {"configurable": {"thread_id": "pages"}, "callbacks": [cb], "recursion_limit": 8}
    out = graph.invoke({"messages": [HumanMessage("Summarise the report")]}, config)
    assert out["messages"][-1].content == "Sorry, need more steps to process this request."
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert "ran out of steps" in str(run.outcome.reason)
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.metadata["failure_mode"] == "planning.step_limit_exhausted"
    last_agent = max(
        e.step_index
        for e in run.events
        if e.type is EventType.AGENT_START and e.agent_name == "agent"
    )
    assert (error.agent_name, error.step_index) == ("agent", last_agent)
    cause = cb.reports[0].root_cause
    assert cause is not None and cause.mode_id == "planning.step_limit_exhausted"
    result, branch = one_round(dbg, run, LangGraphRerunExecutor(graph, debugger=dbg), cb)
    assert branch.metadata["langgraph"]["fork"]["steps_left"] >= 1
    if heeds:  # three pages fit in what the run had left
        assert result.verified_by_rerun is True
        assert branch.outcome.final_answer == "Summary done."
        # from its first step, the run had all of its limit of 8 left (the agent
        # stopped a step short of it): three pages and the summary fit in that
        first = LangGraphRerunExecutor(graph, debugger=dbg).rerun(
            RerunRequest(trajectory=run, resume_step=1, directive="Skip page 1.")
        )
        fork = first.metadata["langgraph"]["fork"]
        assert (fork["recursion_limit"], fork["steps_left"]) == (6, 8)
        assert first.outcome.final_answer == "Summary done."
    else:  # four do not: no more steps than the run had
        assert result.verified_by_rerun is not True
        assert branch.outcome.status is not OutcomeStatus.SUCCESS


class Looping:
    """A model that looks the order up by e-mail (wrong, and again, and again)
    until a directive (a second user message) is in its prompt; then by id, and
    answers. ``heeds=False``: it never stops."""

    def __init__(self, heeds: bool) -> None:
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from lg_graphs import call

        class Model(BaseChatModel):
            @property
            def _llm_type(self) -> str:
                return "looping"

            def bind_tools(self, tools: Any, **kw: Any) -> Any:
                return self

            def _generate(
                self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
            ) -> Any:
                told = heeds and sum(isinstance(m, HumanMessage) for m in messages) > 1
                n = len(messages)
                if (
                    told
                    and isinstance(messages[-1], ToolMessage)
                    and messages[-1].status != "error"
                ):
                    msg: Any = AIMessage("Order A123 costs $42.00.")
                elif told:
                    msg = call("lookup_order", {"order_id": "A123"}, f"c{n}")
                else:
                    msg = call("lookup_order_by_email", {"email": "A123"}, f"c{n}")
                return ChatResult(generations=[ChatGeneration(message=msg)])

        self.model = Model()


def support_graph(kind: str, model: Any) -> Any:
    """``prep``, then a ``support`` subgraph that loops on the model's tool calls:
    a hand-built tool loop (it raises GraphRecursionError at the limit) or the
    prebuilt agent (it says it needs more steps)."""
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import ToolNode, tools_condition
    from lg_graphs import lookup_order, lookup_order_by_email, prebuilt_agent

    tools = [lookup_order_by_email, lookup_order]
    if kind == "prebuilt":
        support = prebuilt_agent(model, tools)
    else:
        inner = StateGraph(MessagesState)
        inner.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
        inner.add_node("tools", ToolNode(tools, handle_tool_errors=True))
        inner.add_edge(START, "agent")
        inner.add_conditional_edges("agent", tools_condition)
        inner.add_edge("tools", "agent")
        support = inner.compile()
    g = StateGraph(MessagesState)
    g.add_node("prep", lambda s: {"messages": []})
    g.add_node("support", support)
    g.add_edge(START, "prep")
    g.add_edge("prep", "support")
    g.add_edge("support", END)
    return g.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("kind", ["tool loop", "prebuilt"])
@pytest.mark.parametrize("heeds", [True, False])
def test_a_subgraph_that_ran_out_of_steps_is_rerun_under_the_runs_limit(
    dbg: AgentDebug, kind: str, heeds: bool
) -> None:
    """LangGraph counts the recursion limit per invocation, a subgraph's too: the
    subgraph that ran out had the whole limit, and the branch's runs again under
    the run's own limit. Held to what the top-level graph had left (its two
    steps), the branch's subgraph could not run at all, and a right diagnosis
    came out unconfirmed. A model that ignores the directive runs out again."""
    from langchain_core.messages import HumanMessage
    from lg_graphs import order_found
    from rerun_support import one_round

    graph = support_graph(kind, Looping(heeds).model)
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config: Any = {"configurable": {"thread_id": "sub"}, "callbacks": [cb], "recursion_limit": 12}
    try:
        graph.invoke({"messages": [HumanMessage("Refund order A123")]}, config)
    except GraphRecursionError:
        assert kind == "tool loop"
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    result, branch = one_round(dbg, run, executor, cb)
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["nodes"] == ["support"] and "steps_left" not in fork
    assert branch.metadata["langgraph"]["invoked_with"]["recursion_limit"] == 12
    if heeds:
        assert result.verified_by_rerun is True
        assert branch.outcome.final_answer == "Order A123 costs $42.00."
    else:
        assert result.verified_by_rerun is not True
        assert branch.outcome.status is OutcomeStatus.FAILURE


def test_a_graph_that_runs_a_subgraph_until_its_own_limit_keeps_its_branch_to_it(
    dbg: AgentDebug,
) -> None:
    """The top-level graph runs out (it calls its subgraph node again and again):
    its branch is held to what the top-level graph had left, as any other."""
    g = StateGraph(Count)
    inner = StateGraph(Count)
    inner.add_node("count", lambda s: {"n": 100 if s.get("stop") else s.get("n", 0) + 1})
    inner.add_edge(START, "count")
    g.add_node("sub", inner.compile())
    g.add_edge(START, "sub")
    g.add_conditional_edges("sub", lambda s: END if s.get("n", 0) >= 100 else "sub", ["sub", END])
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(GraphRecursionError):
        graph.invoke(
            {"n": 0}, {"callbacks": [cb], "configurable": {"thread_id": "t"}, "recursion_limit": 5}
        )
    run = cb.trajectory()
    branch = rerun(dbg, graph, run, 1, {"stop": False})
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["steps_left"] == 5 and fork["recursion_limit"] == 3
    assert branch.outcome.error is not None and branch.outcome.error.type == "GraphRecursionError"


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"recursion_limit": "10"}, "takes a whole number >= 1, not '10'"),
        ({"recursion_limit": -1}, "takes a whole number >= 1, not -1"),
        ({"recursion_limit": True}, "takes a whole number >= 1, not True"),
        ({"configurable": ["thread_id"]}, "config={'configurable': ...}) takes a dict, not list"),
        ("recursion_limit=5", "takes a dict, not str"),
    ],
)
def test_a_bad_branch_config_is_refused_when_the_executor_is_made(
    config: Any, said: str, tmp_path: Any
) -> None:
    """A review: a limit of "10" (read from the environment) was taken, and failed
    only inside the branch, after the branch's thread and a branch run were made
    and stored; the CLI refused the same value at once."""
    dbg = AgentDebug(tmp_path)
    with pytest.raises((TypeError, ValueError)) as raised:
        LangGraphRerunExecutor(debugger=dbg, config=config)
    assert said in str(raised.value)
    LangGraphRerunExecutor(debugger=dbg, config={"recursion_limit": 5, "configurable": {}})
