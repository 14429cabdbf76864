"""Capture: what a user sees in the trajectory of a real LangGraph run."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import agentdebug_langgraph
import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.store import open_store
from agentdebug_langgraph import AgentDebugCallback, instrument, uninstrument
from events_support import of_type, starts
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from lg_graphs import (
    StreamingFake,
    ToolBindingFake,
    fan_out_graph,
    functional_workflow,
    linear_graph,
    order_found,
    prebuilt_agent,
    reviewed_answer,
    scripted,
    subgraph_graph,
    tool_agent,
    wrong_then_right,
)


def test_linear_graph_records_input_nodes_and_final_state(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg, goal="count to three")
    result = linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert result["n"] == 3
    run = cb.trajectory()
    assert run.framework == "langgraph" and run.goal == "count to three"
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert [a.name for a in run.agents] == ["plan", "act", "report"]
    first = run.events[0]
    assert first.type is EventType.USER_INPUT and first.step_index == 0
    assert first.input == {"n": 0, "trail": []}
    nodes = of_type(run, EventType.AGENT_START)
    assert [(e.agent_name, e.step_index) for e in nodes] == [("plan", 1), ("act", 2), ("report", 3)]
    assert [e.metadata["langgraph_step"] for e in nodes] == [1, 2, 3]
    assert nodes[1].metadata["triggers"] == ["branch:to:act"]
    assert all(e.metadata["task_id"] and e.parent_id == first.id for e in nodes)
    ends = of_type(run, EventType.AGENT_END)
    assert [e.output for e in ends] == [
        {"n": 1, "trail": ["plan"]},
        {"n": 2, "trail": ["act"]},
        {"n": 3, "trail": ["report"]},
    ]
    assert all(
        e.duration_ms is not None and e.parent_id == s.id for e, s in zip(ends, nodes, strict=True)
    )
    final = of_type(run, EventType.FINAL_ANSWER)
    assert final[0].output == {"n": 3, "trail": ["plan", "act", "report"]}


def test_tool_loop_records_model_calls_tool_calls_and_token_usage(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    graph = tool_agent(scripted(wrong_then_right()[:2]))
    graph.invoke({"messages": [HumanMessage("Refund order A123")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.goal == "Refund order A123"
    llm = of_type(run, EventType.LLM_RESPONSE)
    assert len(llm) == 2
    assert llm[0].agent_name == "agent" and llm[0].step_index == 1
    assert llm[0].input == [{"role": "user", "content": "Refund order A123"}]
    assert llm[0].output["tool_calls"] == [
        {"id": "c1", "name": "lookup_order_by_email", "args": {"email": "A123"}}
    ]
    assert llm[0].metadata["usage"] == {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
    assert llm[0].metadata["model"]
    # The tool call belongs to the model's decision (step 1), the result to the tools node.
    (tool_call,) = of_type(run, EventType.TOOL_CALL)
    assert tool_call.step_index == 1 and tool_call.agent_name == "agent"
    assert tool_call.parent_id == llm[0].id and tool_call.input == {"email": "A123"}
    assert tool_call.metadata["tool_name"] == "lookup_order_by_email"
    assert tool_call.metadata["executed_by"] == "tools"
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert result.step_index == 2 and result.agent_name == "tools"
    assert result.parent_id == tool_call.id
    assert result.error is not None and "not an e-mail address" in result.error.message
    # The second call records only what the model had not seen before.
    assert llm[1].metadata["prompt_messages"] == 3 and llm[1].metadata["prompt_new_from"] == 1
    assert [m["role"] for m in llm[1].input] == ["assistant", "tool"]
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "Your refund for order A123 has been processed successfully."
    assert final.agent_name == "agent" and final.step_index == 3


def test_a_prompt_whose_earlier_message_was_rewritten_is_recorded_whole(
    dbg: AgentDebug,
) -> None:
    """Between two calls of one node, another node replaces an earlier message by
    its id (``add_messages``: same place, a new object), as a redaction does. The
    second call's record must show what the model saw, not the first prompt plus
    what was added: the rewritten prompt is recorded whole."""
    model = scripted([AIMessage("reply 1"), AIMessage("reply 2")])
    rounds = {"n": 0}

    def route(state: MessagesState) -> str:
        rounds["n"] += 1
        return "redact" if rounds["n"] == 1 else END

    def redact(state: MessagesState) -> dict[str, Any]:
        card = state["messages"][1]
        return {
            "messages": [HumanMessage("my card is [REDACTED]", id=card.id), HumanMessage("and?")]
        }

    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("redact", redact)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["redact", END])
    g.add_edge("redact", "agent")
    cb = AgentDebugCallback(dbg)
    start = [SystemMessage("sys"), HumanMessage("my card is 4111"), HumanMessage("refund it")]
    g.compile().invoke({"messages": start}, {"callbacks": [cb]})
    first, second = of_type(cb.trajectory(), EventType.LLM_RESPONSE)
    assert [m["content"] for m in first.input] == ["sys", "my card is 4111", "refund it"]
    assert [m["content"] for m in second.input] == [
        "sys",
        "my card is [REDACTED]",
        "refund it",
        "reply 1",
        "and?",
    ]
    assert "prompt_new_from" not in second.metadata


def test_a_streamed_model_call_links_its_tool_calls_and_its_answer(dbg: AgentDebug) -> None:
    """A node that streams its model gets the answer as chunks (``AIMessageChunk``):
    the tool call still belongs to the model's decision, and the answer to the
    model call that gave it."""
    cb = AgentDebugCallback(dbg)
    model = StreamingFake(script=[wrong_then_right()[2], wrong_then_right()[3]])
    tool_agent(model, stream=True).invoke(
        {"messages": [HumanMessage("What does order A123 cost?")]}, {"callbacks": [cb]}
    )
    run = cb.trajectory()
    llm = of_type(run, EventType.LLM_RESPONSE)
    assert [e.output["role"] for e in llm] == ["assistant", "assistant"]
    assert llm[0].output["tool_calls"] == [
        {"id": "c2", "name": "lookup_order", "args": {"order_id": "A123"}}
    ]
    (tool_call,) = of_type(run, EventType.TOOL_CALL)
    assert tool_call.parent_id == llm[0].id and tool_call.step_index == llm[0].step_index
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "Order A123 costs $42.00."
    assert final.parent_id == llm[1].id and final.step_index == llm[1].step_index == 3


def test_the_final_answer_belongs_to_the_model_call_that_gave_it(dbg: AgentDebug) -> None:
    """A later model call (here a review whose verdict goes elsewhere) does not
    take the final answer from the call that wrote it."""
    graph = reviewed_answer(
        scripted([AIMessage("Order A123 costs $42.00.")]), scripted([AIMessage("Correct.")])
    )
    cb = AgentDebugCallback(dbg)
    out = graph.invoke({"messages": [HumanMessage("What does A123 cost?")]}, {"callbacks": [cb]})
    assert out["verdict"] == "Correct."
    run = cb.trajectory()
    answered, reviewed = of_type(run, EventType.LLM_RESPONSE)
    assert (answered.agent_name, reviewed.agent_name) == ("answer", "review")
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "Order A123 costs $42.00."
    assert final.agent_name == "answer" and final.parent_id == answered.id
    assert final.step_index == answered.step_index < reviewed.step_index


def test_subgraph_nodes_are_nested_under_their_parent_node(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    subgraph_graph().invoke({"items": [], "out": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    by_agent = starts(run)
    (sub,) = by_agent["sub"]
    (inner,) = by_agent["sub/inner"]
    (after,) = by_agent["after"]
    assert inner.parent_id == sub.id
    assert inner.metadata["namespace"] == "sub" and inner.metadata["root_step"] == sub.step_index
    assert sub.step_index < inner.step_index < after.step_index
    assert "namespace" not in sub.metadata
    assert run.outcome.status is OutcomeStatus.SUCCESS


def test_send_branches_link_to_the_node_that_sent_them(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    out = fan_out_graph().invoke({"items": ["a", "b", "c"], "out": []}, {"callbacks": [cb]})
    assert sorted(out["out"]) == ["did a", "did b", "did c", "planned"]
    run = cb.trajectory()
    (plan,) = starts(run)["plan"]
    work = starts(run)["work"]
    assert len(work) == 3
    assert {e.parent_id for e in work} == {plan.id}
    assert sorted(e.input["items"][0] for e in work) == ["a", "b", "c"]
    assert len({e.step_index for e in work}) == 3
    assert {e.metadata["langgraph_step"] for e in work} == {2}
    assert all(e.metadata["send"] for e in work)


def test_the_prebuilt_agent_runs_each_tool_call_as_a_branch_of_the_models_decision(
    dbg: AgentDebug,
) -> None:
    """``create_react_agent`` sends each tool call to its tool node as a packet that
    also carries the whole graph state; the branch keeps the call alone (the state
    is the agent node's end), so the history is not stored again per tool call."""
    both = AIMessage(
        content="",
        tool_calls=[
            {"name": "weather", "args": {"city": "Paris"}, "id": "w1"},
            {"name": "weather", "args": {"city": "Oslo"}, "id": "w2"},
        ],
    )
    answer = AIMessage(content="Paris is sunny; Oslo has snow.")
    agent = prebuilt_agent(
        ToolBindingFake(messages=iter([both, answer])), checkpointer=InMemorySaver()
    )
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "p-1"}, "callbacks": [cb]}
    agent.invoke({"messages": [HumanMessage("Weather in Paris and Oslo?")]}, config)
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS
    decide, final_turn = starts(run)["agent"]
    tools = starts(run)["tools"]
    assert len(tools) == 2 and {e.parent_id for e in tools} == {decide.id}
    assert all(e.metadata["send"] for e in tools)
    assert {e.metadata["langgraph_step"] for e in tools} == {decide.metadata["langgraph_step"] + 1}
    assert sorted(e.input["tool_call"]["args"]["city"] for e in tools) == ["Oslo", "Paris"]
    assert all(set(e.input) == {"tool_call"} for e in tools)
    assert all(set(e.input["tool_call"]) == {"id", "name", "args"} for e in tools)
    llm = of_type(run, EventType.LLM_RESPONSE)
    calls = of_type(run, EventType.TOOL_CALL)
    assert len(calls) == 2
    assert all(c.parent_id == llm[0].id and c.step_index == decide.step_index for c in calls)
    assert all(c.metadata["executed_by"] == "tools" for c in calls)
    results = {r.output: r for r in of_type(run, EventType.TOOL_RESULT)}
    assert set(results) == {"sunny", "snow"}
    by_step = {e.step_index: e for e in tools}
    assert all(r.agent_name == "tools" and r.step_index in by_step for r in results.values())
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "Paris is sunny; Oslo has snow."
    assert final.parent_id == llm[1].id and final.step_index == final_turn.step_index


def test_functional_api_tasks_are_recorded_inside_their_entrypoint(dbg: AgentDebug) -> None:
    workflow = functional_workflow(scripted([AIMessage("Cats nap in the sun.")]), InMemorySaver())
    cb = AgentDebugCallback(dbg)
    out = workflow.invoke("cats", {"configurable": {"thread_id": "f-1"}, "callbacks": [cb]})
    assert out == {"text": "Cats nap in the sun.", "words": 5}
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS and run.goal == "cats"
    by_agent = starts(run)
    (entry,) = by_agent["workflow"]
    (write,) = by_agent["workflow/write"]
    (count,) = by_agent["workflow/count_words"]
    assert entry.checkpoint is not None and entry.checkpoint.thread_id == "f-1"
    assert write.parent_id == entry.id and count.parent_id == entry.id
    assert write.metadata["namespace"] == "workflow" and write.input == {"topic": "cats"}
    assert entry.step_index < write.step_index < count.step_index
    (llm,) = of_type(run, EventType.LLM_RESPONSE)
    assert llm.agent_name == "workflow/write" and llm.step_index == write.step_index
    assert llm.input == [{"role": "user", "content": "Write one line about cats."}]
    ends = {e.agent_name: e.output for e in of_type(run, EventType.AGENT_END)}
    assert ends["workflow/count_words"] == 5 and ends["workflow"] == out
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == out


def test_checkpoint_ids_name_the_state_each_step_started_from(dbg: AgentDebug) -> None:
    graph = linear_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "t-1"}, "callbacks": [cb]}
    graph.invoke({"n": 0, "trail": []}, config)
    run = cb.trajectory()
    assert run.metadata["langgraph"]["thread_id"] == "t-1"
    nodes = of_type(run, EventType.AGENT_START)
    assert len({e.checkpoint.checkpoint_id for e in nodes}) == 3
    for event in nodes:
        ref = event.checkpoint
        assert ref.framework == "langgraph" and ref.thread_id == "t-1" and ref.namespace == ""
        snap = graph.get_state(
            {"configurable": {"thread_id": "t-1", "checkpoint_id": ref.checkpoint_id}}
        )
        assert snap.next == (event.agent_name,)
        assert [t.id for t in snap.tasks] == [event.metadata["task_id"]]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_subgraph_node_names_the_subgraph_checkpoint_it_started_from(
    dbg: AgentDebug, mode: str
) -> None:
    """A subgraph saves its own checkpoints, under its namespace: its nodes name
    them, and LangGraph finds the subgraph's state by them."""
    graph = subgraph_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": f"s-{mode}"}, "callbacks": [cb]}
    if mode == "sync":
        graph.invoke({"items": [], "out": []}, config)
    else:
        asyncio.run(graph.ainvoke({"items": [], "out": []}, config))
    by_agent = starts(cb.trajectory())
    (sub,), (inner,), (after,) = by_agent["sub"], by_agent["sub/inner"], by_agent["after"]
    assert sub.checkpoint.namespace == after.checkpoint.namespace == ""
    ref = inner.checkpoint
    assert ref is not None and ref.thread_id == f"s-{mode}"
    assert ref.namespace == f"sub:{sub.metadata['task_id']}"
    assert ref.checkpoint_id not in {sub.checkpoint.checkpoint_id, after.checkpoint.checkpoint_id}
    snap = graph.get_state(
        {
            "configurable": {
                "thread_id": f"s-{mode}",
                "checkpoint_ns": ref.namespace,
                "checkpoint_id": ref.checkpoint_id,
            }
        }
    )
    assert snap.next == ("inner",)
    assert [t.id for t in snap.tasks] == [inner.metadata["task_id"]]


def test_without_a_checkpointer_no_checkpoint_is_claimed(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert all(e.checkpoint is None for e in cb.trajectory().events)


def test_stream_and_async_runs_are_captured(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    chunks = list(
        linear_graph().stream({"n": 0, "trail": []}, {"callbacks": [cb]}, stream_mode="updates")
    )
    assert len(chunks) == 3
    assert cb.trajectory().outcome.status is OutcomeStatus.SUCCESS

    async def run_async() -> Any:
        return await linear_graph().ainvoke({"n": 0, "trail": []}, {"callbacks": [cb]})

    assert asyncio.run(run_async())["n"] == 3
    run = cb.trajectory()
    assert len(cb.run_ids) == 2
    assert [e.agent_name for e in of_type(run, EventType.AGENT_START)] == ["plan", "act", "report"]


def test_instrument_captures_runs_without_passing_callbacks(dbg: AgentDebug) -> None:
    handler = instrument(debugger=dbg)
    assert agentdebug_langgraph.instrumented() is handler
    linear_graph().invoke({"n": 0, "trail": []})
    assert len(handler.run_ids) == 1

    # a graph run in another thread is captured too
    thread = threading.Thread(target=lambda: linear_graph().invoke({"n": 0, "trail": []}))
    thread.start()
    thread.join()
    assert len(handler.run_ids) == 2

    # an explicit callback takes the run: it is not recorded twice
    own = AgentDebugCallback(dbg)
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [own]})
    assert len(own.run_ids) == 1 and len(handler.run_ids) == 2

    uninstrument()
    assert agentdebug_langgraph.instrumented() is None
    linear_graph().invoke({"n": 0, "trail": []})
    assert len(handler.run_ids) == 2
    store = dbg.store
    assert store is not None
    assert len(store.list_runs()) == 3


def test_instrument_takes_the_debugger_itself_and_refuses_what_is_not_a_handler(
    dbg: AgentDebug,
) -> None:
    handler = instrument(dbg)  # the natural call: the debugger, positionally
    assert handler.debugger is dbg
    out = linear_graph().invoke({"n": 0, "trail": []})
    assert out["n"] == 3 and handler.trajectory().outcome.status is OutcomeStatus.SUCCESS
    with pytest.raises(TypeError, match="AgentDebugCallback or an AgentDebug, not dict"):
        instrument({"debugger": dbg})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="two debuggers"):
        instrument(dbg, debugger=dbg)
    assert agentdebug_langgraph.instrumented() is handler  # a refused call changes nothing


def test_concurrent_runs_each_become_a_trajectory_of_their_own(dbg: AgentDebug) -> None:
    """``batch`` with one callback, and agents run from many threads at once under
    ``instrument()`` (a server): no run's events end up in another's."""
    cb = AgentDebugCallback(dbg)
    inputs = [{"n": start, "trail": []} for start in (0, 10, 20)]
    linear_graph().batch(inputs, {"callbacks": [cb]})
    finals = {}
    for run_id in cb.run_ids:
        run = cb.trajectory(run_id)
        (final,) = of_type(run, EventType.FINAL_ANSWER)
        finals[run.events[0].input["n"]] = final.output["n"]
    assert finals == {0: 3, 10: 13, 20: 23}

    handler = instrument(dbg)

    def ask(i: int) -> None:
        city = "Paris" if i % 2 else "Oslo"
        decide = AIMessage(
            content="", tool_calls=[{"name": "weather", "args": {"city": city}, "id": f"w{i}"}]
        )
        model = ToolBindingFake(messages=iter([decide, AIMessage(content=f"answer {i}")]))
        prebuilt_agent(model).invoke({"messages": [HumanMessage(f"question {i}")]})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(handler.run_ids) == 6
    for run_id in handler.run_ids:
        run = handler.trajectory(run_id)
        i = int(run.goal.split()[-1])
        assert [r.output for r in of_type(run, EventType.TOOL_RESULT)] == [
            "sunny" if i % 2 else "snow"
        ]
        assert [f.output for f in of_type(run, EventType.FINAL_ANSWER)] == [f"answer {i}"]
        assert [e.agent_name for e in of_type(run, EventType.AGENT_START)] == [
            "agent",
            "tools",
            "agent",
        ]


def test_instrumented_subgraph_and_model_calls_stay_in_the_parent_run(dbg: AgentDebug) -> None:
    handler = instrument(debugger=dbg, success_check=order_found)
    graph = tool_agent(scripted(wrong_then_right()[:2]))
    graph.invoke({"messages": [HumanMessage("Refund order A123")]})
    assert len(handler.run_ids) == 1  # the chat model's own runs are not separate graphs
    run = handler.trajectory()
    assert len(of_type(run, EventType.LLM_RESPONSE)) == 2


def test_errors_inside_the_callback_never_break_the_graph(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(value: Any) -> Any:
        raise RuntimeError("capture bug")

    monkeypatch.setattr(agentdebug_langgraph._convert, "compact", broken)
    cb = AgentDebugCallback(dbg)
    with caplog.at_level(logging.ERROR, logger="agentdebug.langgraph"):
        result = linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert result == {"n": 3, "trail": ["plan", "act", "report"]}
    assert "capture failed" in caplog.text and "capture bug" in caplog.text


def test_a_store_that_cannot_open_does_not_break_the_graph(tmp_path: Any) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    cb = AgentDebugCallback(AgentDebug(blocker / "sub"))
    result = linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert result["n"] == 3


def test_default_debugger_uses_agentdebug_home(_home: Any) -> None:
    cb = AgentDebugCallback()
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert cb.last_run_id is not None
    cb._debugger().flush()
    assert open_store(_home).load_trajectory(cb.last_run_id).framework == "langgraph"


def test_payloads_are_stored_as_compact_makes_them() -> None:
    """Node updates are encoded by orjson with the plugin's default (no walk in
    Python); what is stored must be what ``compact`` makes of the same value."""
    import orjson
    from agentdebug_langgraph._convert import compact, payload, to_json
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.types import Send

    values: list[Any] = [
        {"messages": [HumanMessage(content="hi"), AIMessage(content="", tool_calls=[])]},
        {"n": 1, "trail": ("a", "b"), "nested": {"m": [AIMessage(content="x", name="bot")]}},
        [Send("worker", {"item": 3, "msg": ToolMessage(content="r", tool_call_id="c1")})],
        Command(update={"n": 2}, goto="next"),
        Command(goto=[Send("a", 1), Send("b", {"x": HumanMessage(content="q")})]),
        {"set": {1, 2}, "bytes": b"\xff", "none": None},
        "plain",
    ]
    for value in values:
        assert orjson.loads(orjson.dumps(payload(value), default=to_json)) == orjson.loads(
            orjson.dumps(compact(value), default=to_json)
        ), value


def test_a_default_that_raises_costs_the_event_nothing(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug_langgraph import _callback

    def broken(value: Any) -> Any:
        raise RuntimeError("encoder bug")

    monkeypatch.setattr(_callback, "_to_json", broken)

    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        thing: Any

    g = StateGraph(State)
    g.add_node("make", lambda s: {"thing": Odd()})
    g.add_edge(START, "make")
    g.add_edge("make", END)
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"thing": None}, {"callbacks": [cb]})
    dbg.flush()
    run = cb.trajectory()
    ends = [e for e in run.events if e.type == EventType.AGENT_END]
    assert len(ends) == 1 and "<odd>" in str(ends[0].output)


def test_show_gives_the_checkpoint_each_node_started_from(dbg: AgentDebug) -> None:
    from agentdebug.report import render_run

    cb = AgentDebugCallback(dbg)
    linear_graph(InMemorySaver()).invoke(
        {"n": 0, "trail": []}, {"callbacks": [cb], "configurable": {"thread_id": "t-show"}}
    )
    run = cb.trajectory()
    shown = render_run(run)
    starts = [e for e in run.events if e.type is EventType.AGENT_START]
    assert len(starts) == 3 and all(e.checkpoint is not None for e in starts)
    for e in starts:
        assert e.checkpoint is not None
        assert f"checkpoint {e.checkpoint.checkpoint_id} in thread t-show" in shown


def test_a_node_deleting_messages_records_which_it_deleted(dbg: AgentDebug) -> None:
    """``RemoveMessage`` says nothing but the id of the message it deletes (or that
    it clears the history): that id is what the node's update records."""
    from langchain_core.messages import RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    def forget(state: MessagesState) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=state["messages"][0].id)]}

    def restart(state: MessagesState) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("again")]}

    g = StateGraph(MessagesState)
    g.add_node("forget", forget)
    g.add_node("restart", restart)
    g.add_edge(START, "forget")
    g.add_edge("forget", "restart")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke(
        {"messages": [HumanMessage("old", id="m1"), HumanMessage("keep", id="m2")]},
        {"callbacks": [cb]},
    )
    ends = {
        e.agent_name: e.output["messages"] for e in of_type(cb.trajectory(), EventType.AGENT_END)
    }
    assert ends["forget"] == [{"role": "remove", "id": "m1"}]
    assert ends["restart"][0] == {"role": "remove", "id": REMOVE_ALL_MESSAGES}
    assert ends["restart"][1]["content"] == "again"
