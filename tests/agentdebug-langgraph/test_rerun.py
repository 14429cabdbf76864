"""Checkpoint rerun: fork before the blamed node, run the branch, link it to the original."""

from __future__ import annotations

import gc
import operator
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import lg_graphs
import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.plugins import get_registry
from agentdebug.rerun import closed_loop, compare, find_executor
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor, branch_threads
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send
from lg_graphs import (
    Counter,
    functional_workflow,
    linear_graph,
    order_found,
    scripted,
    sqlite_saver,
    tool_agent,
    wrong_then_right,
)
from rerun_support import (
    REQUEST,
    assert_branch_of,
    failed_run,
    new_nodes,
    request_from,
    verified_branch,
)


def test_closed_loop_reruns_from_the_blamed_node_with_inmemorysaver(dbg: AgentDebug) -> None:
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = failed_run(dbg, graph, "t-mem")
    original = cb.trajectory()
    mine = {"configurable": {"thread_id": "t-mem"}}
    before = [s.config for s in graph.get_state_history(mine)]
    branch = verified_branch(dbg, graph, cb)
    # the user's thread is left as the run left it: the branch ran in a thread of its own
    assert [s.config for s in graph.get_state_history(mine)] == before
    assert "Fix:" not in str(graph.get_state(mine).values["messages"])
    assert branch.outcome.final_answer == "Order A123 costs $42.00."
    assert_branch_of(branch, original, 1)

    # LangGraph's own history: the fork is a child of the checkpoint before the
    # blamed agent step, and the directive is in the forked state.
    fork = branch.metadata["langgraph"]["fork"]
    blamed = next(e for e in original.events if e.type is EventType.AGENT_START)
    assert fork["from_checkpoint_id"] == blamed.checkpoint.checkpoint_id
    assert fork["as_node"] == "__start__" and fork["nodes"] == ["agent"]
    assert fork["original_thread_id"] == "t-mem"
    assert fork["thread_id"].startswith("t-mem~agentdebug-")
    snap = graph.get_state(
        {"configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}}
    )
    assert snap.parent_config["configurable"]["checkpoint_id"] == fork["from_checkpoint_id"]
    assert snap.next == ("agent",)
    directive = snap.values["messages"][-1]
    assert isinstance(directive, HumanMessage) and "Fix:" in directive.content
    # The branch records the fork and then redoes the agent step with the right tool.
    fork_event = next(e for e in branch.events if e.metadata.get("langgraph_event") == "fork")
    assert fork_event.checkpoint.checkpoint_id == fork["checkpoint_id"]
    calls = [e.input for e in branch.events if e.type is EventType.TOOL_CALL]
    assert calls == [{"order_id": "A123"}]
    diff = compare(original, branch)
    assert diff.first_divergence is not None


def test_rerun_with_sqlite_checkpointer_across_a_reopened_connection(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    db = str(tmp_path / "checkpoints.db")
    saver = sqlite_saver(db)
    model = scripted(wrong_then_right())
    cb = failed_run(dbg, tool_agent(model, saver), "t-sql")
    original = cb.trajectory()
    saver.conn.close()
    gc.collect()

    reopened = tool_agent(model, sqlite_saver(db))  # a new graph on a new connection
    executor = LangGraphRerunExecutor(reopened, debugger=dbg, success_check=order_found)
    branch = executor.rerun(request_from(original, cb))
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert_branch_of(branch, original, 1)
    fork_thread = branch.metadata["langgraph"]["fork"]["thread_id"]
    history = list(reopened.get_state_history({"configurable": {"thread_id": fork_thread}}))
    assert any(
        s.config["configurable"]["checkpoint_id"]
        == branch.metadata["langgraph"]["fork"]["checkpoint_id"]
        for s in history
    )


def test_registered_executor_rebuilds_the_graph_from_the_recorded_factory(
    _home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbg = AgentDebug(tmp_path / "project-store")  # not the default store
    db = str(tmp_path / "factory.db")
    monkeypatch.setenv("LG_TEST_DB", db)
    model = scripted(wrong_then_right())
    monkeypatch.setattr(lg_graphs, "FACTORY_MODEL", [model])
    graph = lg_graphs.agent_from_env()
    cb = failed_run(dbg, graph, "t-factory", graph_factory="lg_graphs:agent_from_env")
    original = cb.trajectory()
    assert original.metadata["langgraph"]["graph_factory"] == "lg_graphs:agent_from_env"
    assert original.metadata["langgraph"]["success_check"] == "lg_graphs:order_found"
    graph.checkpointer.conn.close()
    del graph
    gc.collect()

    executor = find_executor("langgraph", get_registry())
    assert executor.framework == "langgraph"
    result = closed_loop(original, debugger=dbg, executor=executor, report=cb.reports[0])
    assert result.status == "succeeded", result.detail
    store = dbg.store
    assert store is not None  # the branch is recorded in the loop's store, beside the run
    assert store.load_trajectory(result.final_run_id or "").parent_id == original.id
    assert not (_home / "agentdebug.db").exists()  # and nothing went to the default store


def test_rerun_refuses_without_a_checkpointer_and_says_how_to_add_one(dbg: AgentDebug) -> None:
    graph = tool_agent(scripted(wrong_then_right()))
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"callbacks": [cb]})
    original = cb.trajectory()
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    with pytest.raises(AgentDebugError) as raised:
        executor.rerun(request_from(original, cb))
    message = str(raised.value)
    assert "no checkpointer" in message
    assert "compile(checkpointer=InMemorySaver())" in message and "thread_id" in message
    result = closed_loop(original, debugger=dbg, executor=executor, report=cb.reports[0])
    assert result.status == "error" and "no checkpointer" in result.detail
    # found before the gate: a human asked (policy "ask") would approve a rerun
    # that cannot run; the round ends with the reason and no decision
    asked = closed_loop(
        original, debugger=dbg, executor=executor, report=cb.reports[0], policy="ask"
    )
    assert asked.status == "error" and "no checkpointer" in asked.detail
    assert asked.attempts[0].decision is None and asked.attempts[0].plan is not None
    # rebuilt by a recorded factory in another process: what is missing is the run's
    # own checkpoints, not the factory's reading of them
    lg = {**original.metadata["langgraph"], "graph_factory": "lg_graphs:unsaved_agent"}
    elsewhere = original.model_copy(update={"id": "elsewhere", "metadata": {"langgraph": lg}})
    with pytest.raises(AgentDebugError) as raised:
        LangGraphRerunExecutor(debugger=dbg).rerun(request_from(elsewhere, cb))
    message = str(raised.value)
    assert "the run was recorded with no checkpointer, so LangGraph kept no state" in message
    assert (
        "its graph factory 'lg_graphs:unsaved_agent' returns a graph compiled without one"
        in message
    )
    assert "the checkpoints the run saved" not in message


def test_a_run_that_saved_only_its_last_checkpoint_is_refused_naming_durability(
    dbg: AgentDebug,
) -> None:
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config = {"configurable": {"thread_id": "t-exit"}, "callbacks": [cb]}
    graph.invoke(REQUEST, config, durability="exit")
    original = cb.trajectory()
    assert not [e for e in original.events if e.checkpoint is not None]  # none claimed
    with pytest.raises(AgentDebugError) as raised:
        LangGraphRerunExecutor(graph, debugger=dbg).rerun(request_from(original, cb))
    message = str(raised.value)
    assert "durability='exit'" in message and "durability 'async'" in message
    assert "InMemorySaver lives only" not in message  # the checkpointer is the right one


def test_a_callback_bound_with_with_config_does_not_record_the_branch_again(
    dbg: AgentDebug,
) -> None:
    cb = AgentDebugCallback(dbg, success_check=order_found)
    base = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    graph = base.with_config({"callbacks": [cb], "configurable": {"thread_id": "t-bound"}})
    graph.invoke(REQUEST)
    original = cb.trajectory()
    branch = verified_branch(dbg, graph, cb)
    assert_branch_of(branch, original, 1)
    assert cb.run_ids == [original.id]  # the user's callback saw only the user's run
    store = dbg.store
    assert store is not None
    assert sorted(r.id for r in store.list_runs()) == sorted([original.id, branch.id])


class Routed(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    orders: list[str]
    hint: str
    prices: Annotated[list[str], operator.add]


def routed_graph(model: Any) -> Any:
    """A supervisor that routes with Command(goto=...) to a worker that asks a model."""
    g = StateGraph(Routed)
    g.add_node("supervisor", lambda s: Command(goto="worker"), destinations=("worker",))
    g.add_node("worker", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_edge(START, "supervisor")
    return g.compile(checkpointer=InMemorySaver())


def test_a_node_a_supervisor_routed_to_with_command_goto_is_rerun(dbg: AgentDebug) -> None:
    model = scripted([AIMessage("I cannot help."), AIMessage("Order A123 costs $42.00.")])
    graph = routed_graph(model)
    answered = lambda state: "$42.00" in state["messages"][-1].content  # noqa: E731
    cb = AgentDebugCallback(dbg, success_check=answered, diagnose=False)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t-routed"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.outcome.status is OutcomeStatus.FAILURE
    worker = next(e for e in original.events if e.agent_name == "worker")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=answered)
    request = RerunRequest(
        trajectory=original, resume_step=worker.step_index, directive="Quote the price."
    )
    branch = executor.rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["langgraph"]["fork"]["as_node"].startswith("supervisor")
    assert new_nodes(branch) == ["worker"]  # forked after the routing, before the worker


def test_an_edge_routed_node_is_not_forked_by_overriding_the_edge(dbg: AgentDebug) -> None:
    """The tool node runs because the model asked for a tool (tools_condition): a
    fork before it must not force it to run anyway. A ToolNode reads no directive,
    so its step is rerun as it was (the model's call, unchanged, no directive in
    the state); a state patch that would route past it is refused."""
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = failed_run(dbg, graph, "t-edge")
    original = cb.trajectory()
    tools = next(e for e in original.events if e.agent_name == "tools")
    request = RerunRequest(trajectory=original, resume_step=tools.step_index, directive="Fix.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    assert "not given" in branch.metadata["langgraph"]["fork"]["directive"]
    asked = [e.input for e in original.events if e.type is EventType.TOOL_CALL]
    again = [
        e.input
        for e in branch.events
        if e.type is EventType.TOOL_CALL and "inherited_from" not in e.metadata
    ]
    assert again[:1] == asked[:1]
    said = [m.content for m in graph.get_state(branch_config(branch)).values["messages"]]
    assert not any("Fix." in str(c) for c in said)
    patched = request.model_copy(update={"state_patch": {"messages": [HumanMessage("Fix.")]}})
    with pytest.raises(AgentDebugError, match="cannot fork before node tools"):
        LangGraphRerunExecutor(graph, debugger=dbg).rerun(patched)


def branch_config(branch: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": branch.metadata["langgraph"]["thread_id"]}}


def map_reduce(model: Any) -> Any:
    """Workers sent one order each, in a packet without the state's messages."""

    def route(state: Routed) -> list[Send]:
        return [
            Send("worker", {"order": o, "hint": state.get("hint", "")}) for o in state["orders"]
        ]

    def worker(packet: dict[str, Any]) -> dict[str, Any]:
        prompt = [HumanMessage(f"Price of {packet['order']}? {packet['hint']}")]
        return {"prices": [model.invoke(prompt).content]}

    g = StateGraph(Routed)
    g.add_node("plan", lambda s: {})
    g.add_node("worker", worker)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", route, ["worker"])
    return g.compile(checkpointer=InMemorySaver())


def test_a_directive_that_cannot_reach_a_send_branch_is_refused_not_rerun_in_vain(
    dbg: AgentDebug,
) -> None:
    model = scripted([AIMessage("unknown"), AIMessage("$42.00"), AIMessage("$42.00")])
    graph = map_reduce(model)
    priced = lambda state: "unknown" not in state["prices"]  # noqa: E731
    cb = AgentDebugCallback(dbg, success_check=priced, diagnose=False)
    config = {"configurable": {"thread_id": "t-map"}, "callbacks": [cb]}
    graph.invoke({**REQUEST, "orders": ["A123"], "hint": "", "prices": []}, config)
    original = cb.trajectory()
    worker = next(e for e in original.events if e.agent_name == "worker")
    request = RerunRequest(trajectory=original, resume_step=worker.step_index, directive="Look.")
    with pytest.raises(AgentDebugError) as raised:
        LangGraphRerunExecutor(graph, debugger=dbg, success_check=priced).rerun(request)
    message = str(raised.value)
    assert "cannot carry the directive to node 'worker'" in message
    assert "keys hint, order" in message and "directive_update" in message
    assert "--executor-option directive_update=module:function" in message  # (the CLI's)
    # forking on the run's own thread, the refusal leaves that thread as it was (the
    # fork is tried on a scratch copy first), and no branch thread behind
    head = graph.get_state(config)
    with pytest.raises(AgentDebugError, match="cannot carry the directive"):
        LangGraphRerunExecutor(graph, debugger=dbg, isolate=False).rerun(request)
    assert graph.get_state(config).config == head.config
    assert graph.get_state(config).values["messages"] == head.values["messages"]
    assert branch_threads(graph) == []
    # the remedy the message names: put the correction where the sending edge reads it
    executor = LangGraphRerunExecutor(
        graph,
        debugger=dbg,
        success_check=priced,
        directive_update=lambda req, snap: {"hint": req.directive},
    )
    branch = executor.rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS


class WholeHistory(TypedDict):
    messages: list[AnyMessage]  # no reducer: each node returns the whole conversation


def test_a_directive_is_added_to_messages_a_node_returns_whole(dbg: AgentDebug) -> None:
    """A ``messages`` key without a reducer is replaced by an update: the fork
    writes the conversation with the directive after it, not the directive alone
    (which would drop the user's request, and fail the branch for that)."""
    from lg_graphs import Heeding

    model = Heeding(cue="does not give the refund amount", default="$420.", heeded="$42.")

    def agent(s: WholeHistory) -> dict[str, Any]:
        asked = any(m.content == "Refund order A123" for m in s["messages"])
        reply = model.invoke(s["messages"]) if asked else AIMessage("Which order?")
        return {"messages": [*s["messages"], reply]}

    g = StateGraph(WholeHistory)
    g.add_node("greet", lambda s: {"messages": [*s["messages"], AIMessage("Hello.")]})
    g.add_node("agent", agent)
    g.add_edge(START, "greet")
    g.add_edge("greet", "agent")
    graph = g.compile(checkpointer=InMemorySaver())

    def refund_given(state: dict[str, Any]) -> bool | str:
        said = str(state["messages"][-1].content)
        return said == "$42." or f"the answer does not give the refund amount: {said}"

    cb = AgentDebugCallback(dbg, success_check=refund_given)
    graph.invoke(
        {"messages": [HumanMessage("Refund order A123")]},
        {"configurable": {"thread_id": "t-whole"}, "callbacks": [cb]},
    )
    fork = verified_branch(dbg, graph, cb, refund_given).metadata["langgraph"]["fork"]
    config = {
        "configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}
    }
    held = graph.get_state(config).values["messages"]
    assert [m.content for m in held[:2]] == ["Refund order A123", "Hello."]
    assert "A previous attempt at this task went wrong" in str(held[2].content)


def test_a_functional_api_run_is_refused_with_what_to_do_instead(dbg: AgentDebug) -> None:
    workflow = functional_workflow(scripted([AIMessage("Dogs bark.")]), InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=lambda out: "cat" in out["text"])
    workflow.invoke("cats", {"configurable": {"thread_id": "f-2"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.outcome.status is OutcomeStatus.FAILURE
    executor = LangGraphRerunExecutor(workflow, debugger=dbg)
    request = RerunRequest(trajectory=original, resume_step=2, directive="Write about cats.")
    with pytest.raises(AgentDebugError) as raised:
        executor.rerun(request)
    message = str(raised.value)
    assert "not a compiled StateGraph" in message and "@entrypoint" in message
    # named by its function, not by LangGraph's default name for a graph
    assert "'workflow' (an @entrypoint) is a Pregel" in message
    assert "call the entrypoint again with a corrected input" in message


def test_a_run_captured_without_thread_id_is_refused(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg, success_check=order_found)
    tool_agent(scripted(wrong_then_right())).invoke(REQUEST, {"callbacks": [cb]})
    with_saver = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    executor = LangGraphRerunExecutor(with_saver, debugger=dbg)
    with pytest.raises(AgentDebugError, match="without a thread id"):
        executor.rerun(request_from(cb.trajectory(), cb))


def test_a_stored_run_whose_graph_is_gone_is_refused_clearly(dbg: AgentDebug) -> None:
    cb = failed_run(dbg, tool_agent(scripted(wrong_then_right()), InMemorySaver()), "t-gone")
    original = cb.trajectory()
    stranger = original.model_copy(update={"id": "elsewhere"})
    with pytest.raises(AgentDebugError, match="graph_factory="):
        LangGraphRerunExecutor(debugger=dbg).rerun(request_from(stranger, cb))


def test_state_patch_forks_a_graph_without_messages(dbg: AgentDebug) -> None:
    graph = linear_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=lambda s: "skip" in s["trail"] or "no skip")
    graph.invoke({"n": 0, "trail": []}, {"configurable": {"thread_id": "t-p"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.outcome.status is OutcomeStatus.FAILURE
    request = RerunRequest(
        trajectory=original, resume_step=2, directive="note a skip", state_patch={"trail": ["skip"]}
    )
    executor = LangGraphRerunExecutor(
        graph, debugger=dbg, success_check=lambda s: "skip" in s["trail"] or "no skip"
    )
    branch = executor.rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.outcome.final_answer["trail"] == ["plan", "skip", "act", "report"]
    assert branch.metadata["langgraph"]["fork"]["as_node"] == "plan"
    assert_branch_of(branch, original, 2)
    assert new_nodes(branch) == ["act", "report"]

    # without a patch, a state with no messages cannot carry the directive
    plain = request.model_copy(update={"state_patch": None})
    with pytest.raises(AgentDebugError, match="no 'messages' key"):
        executor.rerun(plain)
    # a patch of keys the state does not have (update_state would drop them, and the
    # branch run as before) is refused, naming them and the state's keys
    typo = request.model_copy(update={"state_patch": {"trial": ["skip"]}})
    with pytest.raises(AgentDebugError, match=r"has no 'trial' \(its keys: n, trail\)"):
        executor.rerun(typo)


class Ask(TypedDict):
    question: str


class Chat(TypedDict):
    question: str
    hint: str
    messages: Annotated[list[AnyMessage], add_messages]


def test_a_correction_the_input_schema_would_drop_at_the_entry_node_is_refused(
    dbg: AgentDebug,
) -> None:
    """The blamed node is the graph's first, so the fork is an update made as
    ``__start__``, which LangGraph writes through the graph's input schema: keys it
    lacks (the conversation, a hint) are dropped without a word, and the branch
    would run without the correction, calling a right diagnosis unconfirmed. It is
    refused, saying so; a correction in an input key goes through."""

    def agent(s: Chat) -> dict[str, Any]:
        right = s.get("hint") == "42" or "42" in s["question"]
        return {"messages": [AIMessage("The answer is 42." if right else "The answer is 7.")]}

    g = StateGraph(Chat, input_schema=Ask)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=InMemorySaver())

    def check(s: dict[str, Any]) -> bool | str:
        return "42" in s["messages"][-1].content or "wrong answer"

    config = {"configurable": {"thread_id": "t-ask"}}
    graph.invoke({"question": "hello"}, config)  # a first turn: the thread has messages
    cb = AgentDebugCallback(dbg, success_check=check, diagnose=False)
    graph.invoke({"question": "6 * 7?"}, {**config, "callbacks": [cb]})
    original = cb.trajectory()
    step = next(e.step_index for e in original.events if e.agent_name == "agent")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=check)
    directive = RerunRequest(trajectory=original, resume_step=step, directive="Say 42.")
    with pytest.raises(AgentDebugError, match=r"loses 'messages'.*input schema"):
        executor.rerun(directive)
    patched = directive.model_copy(update={"state_patch": {"hint": "42"}})
    with pytest.raises(AgentDebugError, match=r"loses 'hint'"):
        executor.rerun(patched)
    assert branch_threads(graph) == []  # (nothing left behind)
    in_input = directive.model_copy(update={"state_patch": {"question": "6 * 7 = 42?"}})
    assert executor.rerun(in_input).outcome.status is OutcomeStatus.SUCCESS


def test_blaming_a_subgraph_node_reruns_its_parent_node(dbg: AgentDebug) -> None:
    graph = lg_graphs.subgraph_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    graph.invoke(
        {"items": [], "out": []}, {"configurable": {"thread_id": "t-s"}, "callbacks": [cb]}
    )
    original = cb.trajectory()
    inner = next(e for e in original.events if e.agent_name == "sub/inner")
    request = RerunRequest(
        trajectory=original,
        resume_step=inner.step_index,
        directive="again",
        state_patch={"out": []},
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["nodes"] == ["sub"] and fork["requested_resume_step"] == inner.step_index
    assert branch.metadata["branch"]["resume_step"] == 1
    assert new_nodes(branch) == ["sub", "sub/inner", "after"]


def test_the_plugin_module_does_not_import_langgraph() -> None:
    code = (
        "import sys, agentdebug_langgraph._plugin as p;"
        "print('langgraph' in sys.modules, p.RegisteredExecutor().framework)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "langgraph"]


def test_async_graphs_are_captured_and_rerun_with_ainvoke(dbg: AgentDebug) -> None:
    import asyncio

    from langgraph.graph import START, StateGraph
    from lg_graphs import Counter

    async def plan(state: Counter) -> dict[str, Any]:
        return {"n": state["n"] + 1, "trail": ["plan"]}

    async def act(state: Counter) -> dict[str, Any]:
        return {"n": state["n"] + 1, "trail": ["act"]}

    builder = StateGraph(Counter)
    builder.add_node("plan", plan)
    builder.add_node("act", act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "act")
    graph = builder.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "t-async"}, "callbacks": [cb]}
    asyncio.run(graph.ainvoke({"n": 0, "trail": []}, config))
    original = cb.trajectory()
    assert [
        e.checkpoint is not None for e in original.events if e.type is EventType.AGENT_START
    ] == [
        True,
        True,
    ]
    request = RerunRequest(
        trajectory=original, resume_step=2, directive="again", state_patch={"trail": ["fixed"]}
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True).rerun(request)
    assert branch.outcome.final_answer["trail"] == ["plan", "fixed", "act"]
    assert new_nodes(branch) == ["act"]


def test_blaming_one_parallel_branch_reruns_its_whole_super_step(dbg: AgentDebug) -> None:
    graph = lg_graphs.fan_out_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "t-fan"}, "callbacks": [cb]}
    graph.invoke({"items": ["a", "b"], "out": []}, config)
    original = cb.trajectory()
    work = [
        e for e in original.events if e.agent_name == "work" and e.type is EventType.AGENT_START
    ]
    request = RerunRequest(
        trajectory=original,
        resume_step=work[1].step_index,
        directive="again",
        state_patch={"out": ["patched"]},
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["resume_step"] == work[0].step_index and fork["as_node"] == "plan"
    assert new_nodes(branch) == ["work", "work"]
    assert sorted(branch.outcome.final_answer["out"]) == ["did a", "did b", "patched", "planned"]


def test_two_senders_link_and_rerun_every_branch_of_their_super_step(dbg: AgentDebug) -> None:
    graph = lg_graphs.two_senders_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    graph.invoke(
        {"items": [], "out": []}, {"configurable": {"thread_id": "t-two"}, "callbacks": [cb]}
    )
    original = cb.trajectory()
    by_id = {e.id: e for e in original.events}
    work = [
        e for e in original.events if e.agent_name == "work" and e.type is EventType.AGENT_START
    ]
    # each branch points at the node that sent it, whichever finished first
    links = {e.input["items"][0]: by_id[e.parent_id or ""].agent_name for e in work}
    assert links == {"from_a": "a", "from_b": "b"}

    request = RerunRequest(
        trajectory=original,
        resume_step=work[0].step_index,
        directive="again",
        state_patch={"out": ["patched"]},
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    assert new_nodes(branch) == ["work", "work"]  # neither sibling branch is dropped
    assert sorted(branch.outcome.final_answer["out"]) == [
        "a",
        "b",
        "patched",
        "work:from_a",
        "work:from_b",
    ]
    assert branch.metadata["langgraph"]["fork"]["as_node"] == "all of a, b"
