"""Model streams left unread, and success checks that cannot be awaited.

A node may stop reading a model's stream once it has what it needs, and a
consumer may stop reading the graph while a model streams. The model call never
answers then; what it had said by that point is still its reply."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from typing import Any

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.diagnose import diagnose
from agentdebug.report import render_run
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

REPLY = "It is sunny in Paris today."


def model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))  # streams word by word


def one_node(node: Any) -> Any:
    """A message graph of one node, ``agent``."""
    g = StateGraph(MessagesState)
    g.add_node("agent", node)
    g.add_edge(START, "agent")
    return g.compile()


def events(run: AgentTrajectory, *kinds: EventType) -> list[Any]:
    return [e for e in run.events if e.type in kinds]


def the_call(run: AgentTrajectory) -> Any:
    (call,) = events(run, EventType.LLM_RESPONSE)
    return call


def assert_cut_short(run: AgentTrajectory, stopped: str) -> Any:
    """The call is recorded with the text it had given, no error, and why it stopped."""
    call = the_call(run)
    assert call.output == {"role": "assistant", "content": "It is "}
    assert call.error is None
    assert call.metadata["stopped"] == stopped
    return call


def test_an_async_node_that_stops_reading_a_stream_keeps_what_the_model_said(
    dbg: AgentDebug,
) -> None:
    """The event loop closes an async stream only after the node has returned: the
    call is recorded then, with its partial reply, which is the final answer's
    source."""
    chat = model()

    async def agent(state: MessagesState) -> dict[str, Any]:
        said: Any = None
        async for chunk in chat.astream(state["messages"]):
            said = chunk if said is None else said + chunk
            if len(said.content) >= 6:
                break
        return {"messages": [said]}

    app = one_node(agent)
    cb = AgentDebugCallback(dbg)
    asyncio.run(app.ainvoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]}))
    run = cb.trajectory()
    call = assert_cut_short(run, "the caller stopped reading the stream")
    (final,) = events(run, EventType.FINAL_ANSWER)
    assert (final.output, final.parent_id, final.agent_name) == ("It is ", call.id, "agent")


def test_a_sync_node_that_breaks_out_of_a_stream_keeps_what_the_model_said(
    dbg: AgentDebug,
) -> None:
    chat = model()

    def agent(state: MessagesState) -> dict[str, Any]:
        said: Any = None
        for chunk in chat.stream(state["messages"]):
            said = chunk if said is None else said + chunk
            if len(said.content) >= 6:
                break
        return {"messages": [AIMessage(said.content)]}  # a message of its own

    app = one_node(agent)
    cb = AgentDebugCallback(dbg)
    app.invoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    call = assert_cut_short(run, "the caller stopped reading the stream")
    (final,) = events(run, EventType.FINAL_ANSWER)
    assert final.parent_id == call.id


def test_a_stream_left_open_beside_a_complete_call_does_not_take_its_answer(
    dbg: AgentDebug,
) -> None:
    """A node peeks at one stream, keeps it, and answers with another call: the
    stream closes only as the node returns, after that call; the final answer is
    still the complete call's."""
    peek = GenericFakeChatModel(messages=iter([AIMessage("maybe later")]))
    chat = model()

    def agent(state: MessagesState) -> dict[str, Any]:
        stream = peek.stream(state["messages"])
        next(stream)
        return {"messages": [chat.invoke(state["messages"])]}

    app = one_node(agent)
    cb = AgentDebugCallback(dbg)
    app.invoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    stopped, answered = sorted(
        events(run, EventType.LLM_RESPONSE), key=lambda e: "stopped" not in e.metadata
    )
    assert stopped.output["content"] == "maybe"
    assert answered.output["content"] == REPLY
    (final,) = events(run, EventType.FINAL_ANSWER)
    assert final.parent_id == answered.id


def test_a_run_stopped_while_a_model_streams_records_the_call_so_far(dbg: AgentDebug) -> None:
    """The consumer of ``astream_events`` stops at the model's third chunk: the run
    ends stopped before the model answered, and the call is in it, not as the
    model's failure, with the chunks it had given."""
    chat = model()

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    app = one_node(agent)
    cb = AgentDebugCallback(dbg)

    async def read_three_chunks() -> None:
        seen = 0
        stream = app.astream_events(
            {"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]}, version="v2"
        )
        async for event in stream:
            if event["event"] == "on_chat_model_stream":
                seen += 1
                if seen == 3:  # "It", " ", "is"
                    break
        await stream.aclose()

    asyncio.run(read_three_chunks())
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    call = the_call(run)
    assert call.metadata["stopped"] == "the run ended before the model answered"
    assert call.error is None
    assert call.output["content"] in ("It is", "It is ")  # (a chunk more may have come)
    # the caller stopped it and nothing went wrong: a diagnosis names no root cause
    # (no fix to act on), and the timeline says the call was cut off
    assert run.outcome.stopped_by in ("GeneratorExit", "CancelledError")
    report = diagnose(run)
    assert report.root_cause is None and report.fix is None
    assert any(f"stopped before it ended ({run.outcome.stopped_by})" in n for n in report.notes)
    (line,) = [x for x in render_run(run).splitlines() if x.startswith("        [stopped")]
    assert "the run ended before the model answered] It is" in line


def test_an_async_success_check_is_refused_with_what_to_do(dbg: AgentDebug) -> None:
    async def check(state: Any) -> bool:
        return True

    class Judge:
        async def __call__(self, state: Any) -> bool:
            return True

    for bad in (check, Judge()):
        with pytest.raises(TypeError, match="not an async one: it runs as the graph ends"):
            AgentDebugCallback(dbg, success_check=bad)
        with pytest.raises(TypeError, match="LangGraphRerunExecutor"):
            LangGraphRerunExecutor(StateGraph(MessagesState), debugger=dbg, success_check=bad)


def test_a_check_that_returns_a_coroutine_leaves_the_outcome_unknown(dbg: AgentDebug) -> None:
    """A plain function that returns a coroutine (a lambda around an async one):
    its verdict cannot be had, so the run is not called a success for it, and no
    'never awaited' warning comes out of the callback."""

    async def verdict(state: Any) -> str:
        return "wrong answer"

    app = one_node(lambda s: {"messages": [AIMessage("done")]})
    cb = AgentDebugCallback(dbg, success_check=lambda state: verdict(state))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        app.invoke({"messages": [HumanMessage("go")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "returned a coroutine" in str(run.outcome.reason)


def test_a_chunk_a_node_writes_is_its_final_answer_once_langgraph_made_it_a_message(
    dbg: AgentDebug,
) -> None:
    """``add_messages`` turns a chunk into a new ``AIMessage`` with the chunk's id: the
    node that wrote it is still the answer's author, not the user's input."""
    from langchain_core.messages import AIMessageChunk

    app = one_node(lambda s: {"messages": [AIMessageChunk(content="Done.", id="r1")]})
    cb = AgentDebugCallback(dbg)
    out = app.invoke({"messages": [HumanMessage("go")]}, {"callbacks": [cb]})
    assert type(out["messages"][-1]) is AIMessage  # not the object the node returned
    run = cb.trajectory()
    (final,) = events(run, EventType.FINAL_ANSWER)
    (start,) = events(run, EventType.AGENT_START)
    assert (final.agent_name, final.parent_id) == ("agent", start.id)


def test_a_model_call_cancelled_with_its_run_is_a_stop_not_the_models_failure(
    dbg: AgentDebug,
) -> None:
    """The app gives up on a slow model (``asyncio.wait_for``): the call is cancelled,
    which is not an error of the model's for the diagnosis to blame."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Slow(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "slow"

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> Any:
            raise NotImplementedError

        async def _agenerate(self, messages: Any, stop: Any = None, **kw: Any) -> Any:
            await asyncio.sleep(30)
            return ChatResult(generations=[ChatGeneration(message=AIMessage("late"))])

    slow = Slow()

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await slow.ainvoke(state["messages"])]}

    app = one_node(agent)
    cb = AgentDebugCallback(dbg)

    async def give_up() -> None:
        await asyncio.wait_for(
            app.ainvoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]}), 0.3
        )

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(give_up())
    run = cb.trajectory()
    call = the_call(run)  # (before, not recorded at all)
    assert call.metadata["stopped"] == "the run ended before the model answered"
    assert call.error is None and call.output is None
    assert run.outcome.status is OutcomeStatus.UNKNOWN


def test_ctrl_c_in_a_model_call_is_a_stop_not_the_models_failure(dbg: AgentDebug) -> None:
    from langchain_core.language_models import BaseChatModel

    class Interrupted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "interrupted"

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> Any:
            raise KeyboardInterrupt

    chat = Interrupted()
    app = one_node(lambda s: {"messages": [chat.invoke(s["messages"])]})
    cb = AgentDebugCallback(dbg)
    with pytest.raises(KeyboardInterrupt):
        app.invoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]})
    call = the_call(cb.trajectory())
    assert call.metadata["stopped"] == "the call was stopped (KeyboardInterrupt)"
    assert call.error is None
    assert cb.reports == []


def test_a_stream_cut_short_after_a_complete_call_is_the_answer_it_gave(
    dbg: AgentDebug,
) -> None:
    """The node plans with one call, then streams its reply and stops early: the
    reply it returns is the stopped call's, the later of the two."""
    plan = GenericFakeChatModel(messages=iter([AIMessage("PLAN: say the weather")]))
    chat = model()

    def agent(state: MessagesState) -> dict[str, Any]:
        plan.invoke(state["messages"])
        said: Any = None
        for chunk in chat.stream(state["messages"]):
            said = chunk if said is None else said + chunk
            if len(said.content) >= 6:
                break
        return {"messages": [AIMessage(said.content)]}

    cb = AgentDebugCallback(dbg)
    one_node(agent).invoke({"messages": [HumanMessage("Weather?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (stopped,) = [e for e in events(run, EventType.LLM_RESPONSE) if "stopped" in e.metadata]
    (final,) = events(run, EventType.FINAL_ANSWER)
    assert final.parent_id == stopped.id


def test_a_stream_closed_steps_later_does_not_take_a_later_answer(dbg: AgentDebug) -> None:
    """An async node keeps a stream it stopped reading (handed on, or freed only by
    the cycle collector); the agent answers in full at a later step, and the old
    stream is closed after that: the final answer stays the later step's."""
    import gc

    kept: list[Any] = []
    draft = GenericFakeChatModel(messages=iter([AIMessage("Draft: maybe rain")]))
    final_model = GenericFakeChatModel(messages=iter([AIMessage("It rains in Paris.")]))

    async def agent(state: MessagesState) -> dict[str, Any]:
        if len(state["messages"]) == 1:
            stream = draft.astream(state["messages"])
            kept.append(stream)
            async for _ in stream:
                break
            return {"messages": [AIMessage("thinking")]}
        return {"messages": [await final_model.ainvoke(state["messages"])]}

    async def release(state: MessagesState) -> dict[str, Any]:
        await kept.pop().aclose()  # the step-1 stream closes now
        gc.collect()
        return {}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("release", release)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "agent" if len(s["messages"]) < 3 else "release")
    cb = AgentDebugCallback(dbg)
    asyncio.run(g.compile().ainvoke({"messages": [HumanMessage("Rain?")]}, {"callbacks": [cb]}))
    run = cb.trajectory()
    answered, stopped = events(run, EventType.LLM_RESPONSE)  # in the order recorded
    assert stopped.metadata["stopped"] == "the caller stopped reading the stream"
    assert stopped.step_index < answered.step_index and "stopped" not in answered.metadata
    (final,) = events(run, EventType.FINAL_ANSWER)
    assert final.parent_id == answered.id


@pytest.mark.parametrize(
    "consumer",
    [
        "ainvoke beside an async handler",
        "astream_events",
        "a timeout the task handles",
        "a cancel the task swallows",
    ],
)
def test_a_run_cancelled_while_its_graph_starts_ends_instead_of_running_for_good(
    dbg: AgentDebug, consumer: str
) -> None:
    """LangGraph awaits the graph's start on its callback manager before it holds the
    run's manager; beside an async handler (``astream_events``' own, or a user's)
    that await yields, and a cancel landing there is reported to no handler. The
    run still ends, ``unknown``, once the task running it is cancelled, instead of
    staying ``running`` (and held in memory) until the process exits; a task that
    runs graphs to their end keeps nothing of them."""
    from langchain_core.callbacks import AsyncCallbackHandler

    class Theirs(AsyncCallbackHandler):
        async def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
            await asyncio.sleep(0.2 if "task" in consumer else 0)

    app = one_node(lambda s: {"messages": [AIMessage("Done.")]})
    cb = AgentDebugCallback(dbg)
    config: dict[str, Any] = {"callbacks": [cb, Theirs()]}

    async def run_it() -> None:
        if consumer == "astream_events":
            async for _ in app.astream_events({"messages": [HumanMessage("go")]}, config):
                pass
        elif consumer == "a timeout the task handles":
            with contextlib.suppress(TimeoutError):  # (the task ends as usual)
                async with asyncio.timeout(0.05):
                    await app.ainvoke({"messages": [HumanMessage("go")]}, config)
        elif consumer == "a cancel the task swallows":
            with contextlib.suppress(asyncio.CancelledError):  # (it ends as usual)
                await app.ainvoke({"messages": [HumanMessage("go")]}, config)
        else:
            await app.ainvoke({"messages": [HumanMessage("go")]}, config)

    def callbacks_on(task: Any) -> int:
        return len(task._callbacks or ())

    async def main() -> int:
        before = callbacks_on(asyncio.current_task())  # (asyncio.run's own)
        task = asyncio.ensure_future(run_it())
        await asyncio.sleep(0.01 if "task" in consumer else 0)  # the graph's start yields
        if consumer != "a timeout the task handles":
            task.cancel()
        if "task" in consumer:
            await task
        else:
            with pytest.raises(asyncio.CancelledError):
                await task
        await asyncio.sleep(0.05)  # (the task's done callbacks run)
        for _ in range(3):  # graphs run to their end by this (long-lived) task
            await app.ainvoke({"messages": [HumanMessage("again")]}, {"callbacks": [cb]})
        return callbacks_on(asyncio.current_task()) - before

    kept = asyncio.run(main())
    assert len(cb.run_ids) == 4  # the cancelled run ended too (before, it stayed open)
    dbg.flush()  # (an async run's end is written after it returns)
    cancelled = dbg.store.load_trajectory(cb.run_ids[0])
    assert cancelled.outcome.status is OutcomeStatus.UNKNOWN
    assert "stopped (CancelledError)" in (cancelled.outcome.reason or "")
    assert [dbg.store.load_trajectory(r).outcome.status for r in cb.run_ids[1:]] == [
        OutcomeStatus.SUCCESS
    ] * 3
    assert kept == 0  # (no done callback left behind on the task for the runs it ran)


@pytest.mark.parametrize("first_task_ends", ["timed out", "cancelled"])
def test_a_stream_handed_to_another_task_goes_on_when_the_first_task_ends(
    dbg: AgentDebug, first_task_ends: str
) -> None:
    """Task A starts an ``astream``, reads one update, parks the generator and ends
    (its own timeout, or a cancel); task B reads the rest. The run is B's to end: its
    nodes are all recorded, and it succeeds (not ended when A ended)."""
    from typing import TypedDict

    class N(TypedDict):
        n: int

    async def step(s: N) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": s["n"] + 1}

    g = StateGraph(N)
    for name in ("a", "b", "c"):
        g.add_node(name, step)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile()
    cb = AgentDebugCallback(dbg)
    parked: dict[str, Any] = {}

    async def task_a() -> None:
        stream = app.astream({"n": 0}, {"callbacks": [cb]}, stream_mode="updates")
        await stream.__anext__()
        parked["stream"] = stream
        if first_task_ends == "timed out":
            await asyncio.wait_for(asyncio.sleep(1), 0.01)
        else:
            raise asyncio.CancelledError

    async def main() -> list[Any]:
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.create_task(task_a())
        await asyncio.sleep(0.02)  # (A's done callbacks have run)
        return [chunk async for chunk in parked["stream"]]

    assert len(asyncio.run(main())) == 2
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert [e.agent_name for e in events(run, EventType.AGENT_START)] == ["a", "b", "c"]
