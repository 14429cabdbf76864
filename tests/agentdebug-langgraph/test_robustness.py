"""Capture never leaves a run open, whatever the state, the success check or the
process does; and a callback that lives as long as a service stays bounded."""

from __future__ import annotations

import operator
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.store import RunQuery
from agentdebug.testing import finishes_within
from agentdebug_langgraph import AgentDebugCallback, _ending, _live
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Send
from lg_graphs import Counter
from rerun_support import worker


class Box(TypedDict):
    v: Any


def one_node(update: Any) -> Any:
    g = StateGraph(Box)
    g.add_node("make", lambda s: {"v": update})
    g.add_edge(START, "make")
    return g.compile()


@pytest.mark.parametrize("given", ["twice in the config", "bound and in the config"])
def test_the_callback_given_twice_records_one_run_and_diagnoses_it_once(
    dbg: AgentDebug, given: str
) -> None:
    """``graph.with_config(callbacks=[cb])`` and ``invoke(..., {"callbacks": [cb]})``
    (or ``[cb, cb]``): LangChain hands each event to the callback twice. One run is
    recorded, as with the callback once, and a failure is diagnosed once (before, a
    second run holding only the input stayed "running" in the store for good)."""
    from lg_graphs import PaymentDeclined, failing_graph, linear_graph

    def run(graph: Any, inputs: Any, twice: bool) -> AgentDebugCallback:
        cb = AgentDebugCallback(dbg)
        bound = graph.with_config(callbacks=[cb]) if twice and given.startswith("bound") else graph
        bound.invoke(
            inputs, {"callbacks": [cb, cb] if twice and given.startswith("twice") else [cb]}
        )
        return cb

    once, doubled = (run(linear_graph(), {"n": 0, "trail": []}, twice) for twice in (False, True))
    shape = [(e.type, e.agent_name, e.step_index) for e in once.trajectory().events]
    assert [(e.type, e.agent_name, e.step_index) for e in doubled.trajectory().events] == shape
    with pytest.raises(PaymentDeclined) as raised:
        run(failing_graph(PaymentDeclined("card declined")), {"items": [], "out": []}, True)
    assert len([n for n in raised.value.__notes__ if "agentdebug diagnosis" in n]) == 1
    dbg.flush()
    runs = dbg.store.list_runs(RunQuery(limit=10))
    assert len(runs) == 3 and OutcomeStatus.RUNNING.value not in {r.status for r in runs}
    assert [len(dbg.store.load_reports(r.id)) for r in runs if r.status == "failure"] == [1]


def test_a_final_state_that_contains_itself_still_closes_the_run(dbg: AgentDebug) -> None:
    loop: dict[str, Any] = {"a": 1}
    loop["me"] = loop
    cb = AgentDebugCallback(dbg)
    assert one_node(loop).invoke({"v": 0}, {"callbacks": [cb]})["v"] is loop
    run = cb.trajectory()  # the run was closed and is in the store
    assert run.outcome.status is OutcomeStatus.SUCCESS
    (end,) = [e for e in run.events if e.type is EventType.AGENT_END]
    # only the reference back is replaced, with a note (before: the whole update as text)
    assert end.output == {"v": {"a": 1, "me": "<cycle: refers back to the dict that holds it>"}}
    assert "output_cycles" in end.metadata["capture_notes"]


def test_a_state_that_refers_back_to_itself_twice_is_recorded_at_once(dbg: AgentDebug) -> None:
    parent: dict[str, Any] = {"name": "root", "children": []}
    for i in range(2):  # two ways back to the root: a walk without memory doubles per level
        parent["children"].append({"name": f"c{i}", "parent": parent})
    cb = AgentDebugCallback(dbg)
    finishes_within(60, lambda: one_node(parent).invoke({"v": parent}, {"callbacks": [cb]}))
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS
    (given,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert "'name': 'root'" in str(given.input)


class Client:
    """An SDK client whose ``repr`` reads an attribute set later (so it raises)."""

    def __repr__(self) -> str:
        return f"Client({self.endpoint})"  # type: ignore[attr-defined]


def test_an_input_whose_repr_raises_is_recorded_and_judged(dbg: AgentDebug) -> None:
    """The goal is made from the input: an object in it whose ``repr`` raises reads
    as ``<unprintable Client>`` (before, the run was not recorded at all, and its
    failed success check was never diagnosed)."""
    cb = AgentDebugCallback(dbg, success_check=lambda state: "no answer")
    assert one_node(7).invoke({"v": Client()}, {"callbacks": [cb]})["v"] == 7
    run = cb.trajectory()
    assert run.goal == '{"v":"<unprintable Client>"}'
    assert run.outcome.status is OutcomeStatus.FAILURE and len(cb.reports) == 1


def test_text_utf8_cannot_hold_inside_a_message_is_escaped_not_lost(dbg: AgentDebug) -> None:
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [AIMessage("bad \ud800 text")]})
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("hi")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (end,) = [e for e in run.events if e.type is EventType.AGENT_END]
    assert end.output == {"messages": [{"role": "assistant", "content": "bad \\ud800 text"}]}
    assert run.outcome.final_answer == "bad \\ud800 text"


class Unprintable(ValueError):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_a_success_check_raising_an_unprintable_error_gives_unknown_not_an_open_run(
    dbg: AgentDebug,
) -> None:
    def check(state: Any) -> bool:
        raise Unprintable()

    cb = AgentDebugCallback(dbg, success_check=check)
    one_node(1).invoke({"v": 0}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "the success check raised Unprintable" in (run.outcome.reason or "")


def test_ctrl_c_in_the_success_check_propagates_and_the_run_is_closed(dbg: AgentDebug) -> None:
    def check(state: Any) -> bool:
        raise KeyboardInterrupt

    cb = AgentDebugCallback(dbg, success_check=check)
    with pytest.raises(KeyboardInterrupt):
        one_node(1).invoke({"v": 0}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "stopped (KeyboardInterrupt)" in (run.outcome.reason or "")


@pytest.mark.parametrize(
    ("verdict", "status", "reason"),
    [
        (1, OutcomeStatus.SUCCESS, "the success check passed"),
        (0, OutcomeStatus.FAILURE, "the success check returned 0"),
        ("   ", OutcomeStatus.FAILURE, "the success check failed"),  # (not a blank reason)
    ],
)
def test_a_success_check_result_counts_as_python_reads_it(
    dbg: AgentDebug, verdict: Any, status: OutcomeStatus, reason: str
) -> None:
    cb = AgentDebugCallback(dbg, success_check=lambda state: verdict, diagnose=False)
    one_node(1).invoke({"v": 0}, {"callbacks": [cb]})
    outcome = cb.trajectory().outcome
    assert (outcome.status, outcome.reason) == (status, reason)


def test_an_ok_and_why_pair_is_a_verdict(dbg: AgentDebug) -> None:
    """``(ok, why)``, as the ReAct plugin's checks return it."""
    for verdict, status in [((False, "wrong total"), OutcomeStatus.FAILURE),
                            ((True, None), OutcomeStatus.SUCCESS)]:  # fmt: skip
        cb = AgentDebugCallback(dbg, success_check=lambda state, v=verdict: v, diagnose=False)
        one_node(1).invoke({"v": 0}, {"callbacks": [cb]})
        assert cb.trajectory().outcome.status is status
    assert cb.trajectory().outcome.reason == "the success check passed"


@pytest.mark.parametrize("verdict", [("no", "why"), {"passed": False}, [], ["an error"]])
def test_a_success_check_returning_a_container_leaves_the_outcome_unknown(
    dbg: AgentDebug, verdict: Any
) -> None:
    """``("no", "why")`` and ``{"passed": False}`` are truthy, and read as a pass;
    a list of errors reads backwards (``[]``, no errors, is falsy): so a container is
    no verdict, and the reason says what to return (a review's find)."""
    cb = AgentDebugCallback(dbg, success_check=lambda state: verdict, diagnose=False)
    one_node(1).invoke({"v": 0}, {"callbacks": [cb]})
    outcome = cb.trajectory().outcome
    assert outcome.status is OutcomeStatus.UNKNOWN
    assert "return True (or None) for a pass, and a string" in (outcome.reason or "")


def test_a_success_check_that_is_not_a_function_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="takes a function of the final state, not int"):
        AgentDebugCallback(success_check=42)  # type: ignore[arg-type]
    # nor an on_report (before, each failed run logged "'int' object is not callable")
    with pytest.raises(TypeError, match=r"on_report=...\) takes a function of the report"):
        AgentDebugCallback(on_report=5)  # type: ignore[arg-type]
    # nor a store's path where the debugger goes (before, every run logged an
    # AttributeError from inside the handler and recorded nothing)
    with pytest.raises(TypeError, match=r"takes an AgentDebug \(AgentDebug\(path\) for a store"):
        AgentDebugCallback("/tmp/store")  # type: ignore[arg-type]
    # nor metadata that is no dict (before, Python's "dictionary update sequence element
    # #0 ..."), nor a negative first step (before, accepted and ignored)
    with pytest.raises(TypeError, match=r"metadata=...\) takes a dict stored with each run"):
        AgentDebugCallback(metadata="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"first_step=...\) takes a step number, 0 or more"):
        AgentDebugCallback(first_step=-5)


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ({"isolate": "false"}, "isolate=...) takes True or False, not 'false'"),
        ({"asynchronous": "maybe"}, "(or None: as the run was made), not 'maybe'"),
    ],
)
def test_an_executor_flag_that_is_not_one_is_refused_at_once(
    option: dict[str, Any], said: str
) -> None:
    """``isolate="false"`` is a string, which is true: before, the branch was
    isolated all the same, without a word."""
    from agentdebug_langgraph import LangGraphRerunExecutor

    with pytest.raises(TypeError, match=re.escape(said)):
        LangGraphRerunExecutor(**option)


def test_a_stream_the_node_stops_reading_is_not_a_model_error(dbg: AgentDebug) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("first line\nSTOP and the rest")]))

    def node(state: MessagesState) -> dict[str, Any]:
        text = ""
        for chunk in model.stream(state["messages"]):
            text += str(chunk.content)
            if "STOP" in text:
                break
        return {"messages": [AIMessage(text)]}

    g = StateGraph(MessagesState)
    g.add_node("agent", node)
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("hi")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (call,) = [e for e in run.events if e.type is EventType.LLM_RESPONSE]
    assert call.error is None and "stopped" in call.metadata
    assert run.outcome.status is OutcomeStatus.SUCCESS


def test_a_long_lived_callback_lists_only_its_latest_runs_and_reports(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ending, "KEPT", 3)
    monkeypatch.setattr(_live, "LIVE_KEPT", 2)  # the graphs kept for reruns, by run
    cb = AgentDebugCallback(dbg, success_check=lambda state: "no", diagnose=True)
    graph = one_node(1)
    for _ in range(5):
        graph.invoke({"v": 0}, {"callbacks": [cb]})
    store = dbg.store
    assert store is not None
    assert len(store.list_runs()) == 5  # the store has every run
    assert len(cb.run_ids) == 3 and len(cb.reports) == 3
    assert cb.last_run_id == cb.run_ids[-1] and cb.trajectory().id == cb.last_run_id
    assert _live.live_graph(cb.run_ids[-1]) is graph
    assert _live.live_graph(cb.run_ids[0]) is None  # older runs rebuild it (graph_factory)


PAUSE_AND_EXIT = """
import sys
sys.path.insert(0, sys.argv[2])
from langgraph.checkpoint.memory import InMemorySaver
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from lg_graphs import approval_graph
graph = approval_graph(InMemorySaver())
cb = AgentDebugCallback(AgentDebug(sys.argv[1]))
graph.invoke({"items": [], "out": []}, {"callbacks": [cb], "configurable": {"thread_id": "o1"}})
print("exiting", flush=True)
"""


def only_run_after(script: str, tmp_path: Path, *, timeout: int = 120) -> AgentTrajectory:
    """Run ``script`` (a process recording into a fresh home) to its end, and read
    back the one run it recorded."""
    home = tmp_path / "home"
    worker(script, home, timeout=timeout)
    dbg = AgentDebug(home)
    try:
        store = dbg.store
        assert store is not None
        (summary,) = store.list_runs()
        return store.load_trajectory(summary.id)
    finally:
        dbg.close()


def test_a_run_waiting_at_an_interrupt_when_the_process_ends_is_closed(tmp_path: Path) -> None:
    run = only_run_after(PAUSE_AND_EXIT, tmp_path)
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "the process ended before a resume" in (run.outcome.reason or "")
    assert any(e.type is EventType.CHECKPOINT for e in run.events)  # the interrupt


class Fan(TypedDict):
    tag: str
    out: Annotated[list[str], operator.add]


def test_one_handler_shared_by_graphs_in_many_threads_closes_every_run(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler shared across threads (as ``instrument()``'s is): a run ending
    while others fill the handler's tables must not trip over them (it once
    raised "dictionary changed size during iteration" and left the run open).
    The interpreter switches threads as often as it can, to make that likely."""
    g = StateGraph(Fan)
    g.add_node("plan", lambda s: {"out": [s["tag"] + ":plan"]})
    g.add_node("work", lambda s: {"out": [s["tag"] + ":work"]})
    g.add_conditional_edges(
        "plan", lambda s: [Send("work", {"tag": s["tag"], "out": []}) for _ in range(20)], ["work"]
    )
    g.add_edge(START, "plan")
    graph = g.compile()
    cb = AgentDebugCallback(dbg, diagnose=False)
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda i: graph.invoke({"tag": f"t{i}", "out": []}, {"callbacks": [cb]}),
                    range(256),
                )
            )
    finally:
        sys.setswitchinterval(before)
    assert not [r for r in caplog.records if "capture failed" in r.getMessage()]
    store = dbg.store
    assert store is not None
    runs = store.list_runs(RunQuery(limit=None))
    assert len(runs) == 256 and {r.status for r in runs} == {"success"}
    assert not cb._nodes and not cb._by_ns and not cb._roots  # nothing left behind


STREAM_LEFT_OPEN = """
import sys
sys.path.insert(0, sys.argv[2])
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from lg_graphs import linear_graph
cb = AgentDebugCallback(AgentDebug(sys.argv[1]))
left_open = linear_graph().stream({"n": 0, "trail": []}, {"callbacks": [cb]})
next(left_open)
print("exiting", flush=True)
"""


def test_a_stream_left_open_at_exit_neither_hangs_the_exit_nor_leaves_the_run_open(
    tmp_path: Path,
) -> None:
    """The generator is closed as the interpreter tears down, after the writer's
    exit flush, when its threads no longer run: the exit once waited for them
    for good. The run's end is written on the closing thread instead."""
    run = only_run_after(STREAM_LEFT_OPEN, tmp_path, timeout=60)
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "stopped (GeneratorExit)" in (run.outcome.reason or "")
    assert not [e for e in run.events if e.type is EventType.ERROR]  # a stop, not an error
    (stop,) = [e for e in run.events if e.metadata.get("langgraph_event") == "stopped"]
    assert stop.metadata["by"] == "GeneratorExit"


GRAPH_IN_A_DAEMON_THREAD = """
import sys, threading
from typing import TypedDict
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langgraph.graph import END, START, StateGraph

class State(TypedDict):
    n: int

started = threading.Event()

def stuck(state):
    started.set()
    threading.Event().wait()  # the program ends while this node runs
    return {"n": 1}

graph = StateGraph(State)
graph.add_node("stuck", stuck)
graph.add_edge(START, "stuck")
graph.add_edge("stuck", END)
cb = AgentDebugCallback(AgentDebug(sys.argv[1]), diagnose=False)
run = lambda: graph.compile().invoke({"n": 0}, {"callbacks": [cb]})
threading.Thread(target=run, daemon=True).start()
started.wait()
print("exiting", flush=True)
"""


def test_a_graph_running_in_a_daemon_thread_at_exit_is_not_left_running(
    tmp_path: Path,
) -> None:
    """The interpreter stops a daemon thread where it stands, so the run never
    ends on its own: it is stored as ended, the exit in its reason, its node's
    start kept (before, it was "running" in the store for good)."""
    run = only_run_after(GRAPH_IN_A_DAEMON_THREAD, tmp_path, timeout=60)
    assert run.outcome.status is OutcomeStatus.UNKNOWN and run.ended_at is not None
    assert run.outcome.reason == "the process exited with the run still open"
    assert [e.agent_name for e in run.events if e.type is EventType.AGENT_START] == ["stuck"]


STOP_ON_FILE = """
import sys
sys.path.insert(0, sys.argv[2])
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from lg_graphs import PaymentDeclined, approval_graph, failing_graph, sqlite_saver
cb = AgentDebugCallback(AgentDebug(sys.argv[1]), goal="refund order A1", diagnose=False)
config = {"callbacks": [cb], "configurable": {"thread_id": "w1"}}
approval_graph(sqlite_saver(sys.argv[3])).invoke({"items": [], "out": []}, config)
config = {"callbacks": [cb], "configurable": {"thread_id": "w2"}}
try:
    failing_graph(PaymentDeclined("no"), sqlite_saver(sys.argv[3])).invoke({"items": [], "out": []}, config)
except PaymentDeclined:
    pass
print("exiting", flush=True)
"""


def test_a_resume_or_retry_in_another_process_continues_the_run_that_stopped(
    tmp_path: Path,
) -> None:
    """A worker process pauses one run at an interrupt and fails another, then
    ends; this process resumes the first thread and retries the second (another
    worker of the same service, the same store and checkpointer file): each new run
    names the run it continues and keeps its goal; a new request does not."""
    from agentdebug.schema import RerunRequest
    from agentdebug_langgraph import LangGraphRerunExecutor
    from langgraph.types import Command
    from lg_graphs import (
        PaymentDeclined,
        approval_graph,
        failing_graph,
        linear_graph,
        sqlite_saver,
    )

    home, db = tmp_path / "home", str(tmp_path / "cp.db")
    worker(STOP_ON_FILE, home, db)
    dbg = AgentDebug(home)
    try:
        assert dbg.store is not None
        runs = [dbg.store.load_trajectory(r.id) for r in dbg.store.list_runs()]
        by_thread = {t.metadata["langgraph"]["thread_id"]: t for t in runs}
        paused, failed = by_thread["w1"], by_thread["w2"]
        assert paused.outcome.status is OutcomeStatus.UNKNOWN  # (closed when it exited)
        cb = AgentDebugCallback(dbg, diagnose=False)
        approval_graph(sqlite_saver(db)).invoke(
            Command(resume="yes"), {"callbacks": [cb], "configurable": {"thread_id": "w1"}}
        )
        resumed = cb.trajectory()
        assert resumed.metadata["continues"] == paused.id and resumed.goal == "refund order A1"
        # a rerun of the failed run (a branch thread of its own) is not what a retry
        # on the thread continues
        branch = LangGraphRerunExecutor(
            failing_graph(PaymentDeclined("still"), sqlite_saver(db)), debugger=dbg
        ).rerun(
            RerunRequest(trajectory=failed, resume_step=1, directive="x", state_patch={"out": []})
        )
        assert branch.outcome.status is OutcomeStatus.FAILURE
        with pytest.raises(PaymentDeclined):
            failing_graph(PaymentDeclined("again"), sqlite_saver(db)).invoke(
                None, {"callbacks": [cb], "configurable": {"thread_id": "w2"}}
            )
        assert cb.trajectory().metadata["continues"] == failed.id
        # a run that completed (its success check failed) stopped nothing to go on from
        judged = AgentDebugCallback(dbg, success_check=lambda s: "no", diagnose=False)
        config: Any = {"callbacks": [judged], "configurable": {"thread_id": "w3"}}
        linear_graph(sqlite_saver(db)).invoke({"n": 0, "trail": []}, config)
        linear_graph(sqlite_saver(db)).invoke(None, config)  # (another saver: via the store)
        assert "continues" not in judged.trajectory().metadata
        with pytest.raises(PaymentDeclined):  # a new request on the thread
            failing_graph(PaymentDeclined("new"), sqlite_saver(db)).invoke(
                {"items": [], "out": []}, {"callbacks": [cb], "configurable": {"thread_id": "w2"}}
            )
        assert "continues" not in cb.trajectory().metadata
    finally:
        dbg.close()


def test_ctrl_c_in_a_node_is_a_stop_at_that_node_not_its_error(dbg: AgentDebug) -> None:
    """A ``KeyboardInterrupt`` (or a cancel, an exit) raised while a node runs
    stops the run; the node did nothing wrong, so no error is recorded that a
    later diagnosis would blame it for."""

    def boom(state: Counter) -> dict[str, Any]:
        raise KeyboardInterrupt

    g = StateGraph(Counter)
    g.add_node("plan", lambda s: {"n": 1, "trail": ["plan"]})
    g.add_node("boom", boom)
    g.add_edge(START, "plan")
    g.add_edge("plan", "boom")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(KeyboardInterrupt):
        g.compile().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert run.outcome.reason == "the run was stopped (KeyboardInterrupt)"
    assert not [e for e in run.events if e.type is EventType.ERROR] and not cb.reports
    (stop,) = [e for e in run.events if e.metadata.get("langgraph_event") == "stopped"]
    started = next(e for e in run.events if e.id == stop.parent_id)
    assert (stop.agent_name, stop.metadata["by"], started.type) == (
        "boom",
        "KeyboardInterrupt",
        EventType.AGENT_START,
    )
    assert dbg.diagnose(run).root_cause is None
