"""A failed run's diagnosis leaves an async app's event loop alone: with a model
configured (a real local server that speaks the OpenAI API), a run that ends on
the loop is diagnosed on agentdebug's diagnosis thread while the loop goes on;
a sync run, or the free tier, is diagnosed where it ended, its summary on the
exception."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.llm.testing import Reply, ScriptedServer, schema_answerer
from agentdebug.schema import DiagnosticReport
from agentdebug_langgraph import AgentDebugCallback
from lg_graphs import PaymentDeclined, failing_graph

START: Any = {"items": ["card"], "out": []}


class HeldServer:
    """A scripted model server whose answers wait until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()
        self.server = ScriptedServer(self._answer)

    def _answer(self, body: dict[str, Any]) -> Reply:
        self.asked.set()
        if not self.release.wait(timeout=5):  # (held up: nobody let it answer)
            return Reply("nobody released the answer", status=500)
        return schema_answerer(body)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldServer]:
    held = HeldServer()
    with held.server:
        monkeypatch.setenv("AGENTDEBUG_MODEL", "scripted")
        monkeypatch.setenv("AGENTDEBUG_BASE_URL", held.server.base_url)
        monkeypatch.setenv("AGENTDEBUG_API_KEY", "test-key")
        yield held
        held.release.set()


def test_a_run_failing_on_the_event_loop_is_diagnosed_in_the_background(
    dbg: AgentDebug, model: HeldServer
) -> None:
    """The model does not answer until the test lets it: the run's exception
    reaches the caller meanwhile (inline, the model's first answer would be
    waited for, and time out); the report comes when the model has answered,
    through ``on_report``."""
    got: list[DiagnosticReport] = []
    cb = AgentDebugCallback(dbg, on_report=got.append)

    async def app() -> BaseException:
        try:
            await failing_graph(PaymentDeclined("card declined")).ainvoke(
                START, {"callbacks": [cb]}
            )
        except PaymentDeclined as exc:  # here while the model has not answered
            await asyncio.to_thread(model.asked.wait, 20)  # the diagnosis asks it
            return exc
        raise AssertionError("the graph did not raise")

    raised = asyncio.run(app())
    assert str(raised) == "card declined"  # the exception is the graph's, unchanged
    note = raised.__notes__[-1]  # (LangGraph's async run notes the task first)
    assert f"agentdebug is diagnosing run {cb.last_run_id} in the background" in note
    assert cb.reports == [] and got == []
    model.release.set()
    (report,) = cb.wait_for_reports(timeout=60)
    assert got == [report] and cb.reports == [report]
    assert report.trajectory_id == cb.last_run_id and report.tier == "model"
    assert model.server.requests  # (through the real client, to the local server)
    assert dbg.store is not None and dbg.store.load_reports(report.trajectory_id) == [report]


def test_a_sync_run_with_a_model_is_diagnosed_where_it_ended(
    dbg: AgentDebug, model: HeldServer
) -> None:
    model.release.set()
    cb = AgentDebugCallback(dbg)
    with pytest.raises(PaymentDeclined) as raised:
        failing_graph(PaymentDeclined("card declined")).invoke(START, {"callbacks": [cb]})
    (report,) = cb.reports
    note = raised.value.__notes__[-1]
    assert note.startswith(f"agentdebug diagnosis {report.id} of run {cb.last_run_id}:")
    assert report.tier == "model"


def test_the_free_tier_on_the_event_loop_is_diagnosed_inline(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)

    async def app() -> None:
        await failing_graph(PaymentDeclined("card declined")).ainvoke(START, {"callbacks": [cb]})

    with pytest.raises(PaymentDeclined) as raised:
        asyncio.run(app())
    (report,) = cb.reports
    assert report.tier == "free"
    assert raised.value.__notes__[-1].startswith(f"agentdebug diagnosis {report.id}")


def test_where_the_diagnosis_runs_can_be_chosen(dbg: AgentDebug, model: HeldServer) -> None:
    """``diagnose="background"`` for a sync run too (a worker that must answer
    fast); ``"inline"`` on the loop (a script that waits for its report anyway)."""
    cb = AgentDebugCallback(dbg, diagnose="background")
    with pytest.raises(PaymentDeclined) as raised:
        failing_graph(PaymentDeclined("card declined")).invoke(START, {"callbacks": [cb]})
    assert "in the background" in raised.value.__notes__[-1] and cb.reports == []
    model.release.set()
    assert len(cb.wait_for_reports(timeout=60)) == 1

    inline = AgentDebugCallback(dbg, diagnose="inline")

    async def app() -> None:
        await failing_graph(PaymentDeclined("no")).ainvoke(START, {"callbacks": [inline]})

    with pytest.raises(PaymentDeclined) as again:
        asyncio.run(app())
    assert again.value.__notes__[-1].startswith("agentdebug diagnosis") and inline.reports
    with pytest.raises(ValueError, match=r"AgentDebugCallback\(diagnose=\.\.\.\) takes True"):
        AgentDebugCallback(dbg, diagnose="later")


def test_every_background_report_is_waited_for_once(dbg: AgentDebug, model: HeldServer) -> None:
    """Runs that fail one after another, each diagnosis done before the next
    failure: ``wait_for_reports`` gives all of them, in order, and then none."""
    model.release.set()
    cb = AgentDebugCallback(dbg, diagnose="background")
    for _ in range(3):
        with pytest.raises(PaymentDeclined):
            failing_graph(PaymentDeclined("card declined")).invoke(START, {"callbacks": [cb]})
        while len(cb.reports) < len(cb.run_ids):  # (the diagnosis finished meanwhile)
            threading.Event().wait(0.02)
    reports = cb.wait_for_reports(timeout=60)
    assert [r.trajectory_id for r in reports] == cb.run_ids
    assert cb.wait_for_reports(timeout=1) == []


def test_a_sync_call_on_a_thread_with_a_loop_is_diagnosed_inline(
    dbg: AgentDebug, model: HeldServer
) -> None:
    """``graph.invoke`` in a notebook cell (the kernel's loop runs on its thread)
    is a sync call: its exception carries the report's summary, as anywhere."""
    model.release.set()
    cb = AgentDebugCallback(dbg)

    async def cell() -> None:
        failing_graph(PaymentDeclined("card declined")).invoke(START, {"callbacks": [cb]})

    with pytest.raises(PaymentDeclined) as raised:
        asyncio.run(cell())
    (report,) = cb.reports
    assert raised.value.__notes__[-1].startswith(f"agentdebug diagnosis {report.id}")


# A fresh process: an app whose first run succeeds. Prints whether the diagnosis's
# modules were imported (by the warm-up thread) within the seconds given after it.
WARM = """
import asyncio, os, sys, time
from typing import TypedDict
from langgraph.graph import START, StateGraph
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback

class S(TypedDict):
    n: int

def step(state):  # (a sync node: ainvoke runs it too)
    return {"n": state["n"] + 1}

g = StateGraph(S)
g.add_node("step", step)
g.add_edge(START, "step")
app = g.compile()
cb = AgentDebugCallback(AgentDebug(sys.argv[1]), diagnose=sys.argv[2] == "on")
run = app.ainvoke if sys.argv[3] == "async" else None
if run is not None:
    asyncio.run(run({"n": 0}, {"callbacks": [cb]}))
else:
    app.invoke({"n": 0}, {"callbacks": [cb]})
deadline = time.monotonic() + float(sys.argv[4])
while "agentdebug.diagnose" not in sys.modules and time.monotonic() < deadline:
    time.sleep(0.05)
print("agentdebug.diagnose" in sys.modules)
"""


@pytest.mark.parametrize(
    ("diagnose", "mode", "imported"),
    [("on", "async", True), ("off", "async", False), ("on", "sync", False)],
)
def test_after_an_async_run_the_diagnosis_is_imported_off_the_loop(
    tmp_path: Any, diagnose: str, mode: str, imported: bool
) -> None:
    """An async app's first failure would import the whole diagnosis on its event
    loop (about 0.3 s during which no task runs); after its first run that ended
    without failing, a thread of agentdebug's imports it instead. Not for a sync
    app (its diagnosis runs where the run ended anyway), nor without diagnosis."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            WARM,
            str(tmp_path / "home"),
            diagnose,
            mode,
            "20" if imported else "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "OTEL_SDK_DISABLED": "true"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # (the runs that do not warm it up show that a run which ends well imports
    # none of it itself)
    assert done.stdout.split() == [str(imported)]


def test_an_async_run_does_not_hold_the_loop_for_a_locked_store(dbg: AgentDebug) -> None:
    """Another connection holds the store's write lock (a backup, ``prune
    --vacuum``, a sqlite3 shell): an ``ainvoke`` returns at once, its run's end
    left to the writer thread (before: the loop, and every request on it, waited
    the 5 s a run waits for a locked store). Once the lock goes, the run is
    there, ended as it ended."""
    import sqlite3

    from lg_graphs import linear_graph

    graph, cb = linear_graph(coroutines=True), AgentDebugCallback(dbg)
    asyncio.run(graph.ainvoke({"n": 0, "trail": []}, {"callbacks": [cb]}))  # (the store made)
    holder = sqlite3.connect(dbg.store.location, isolation_level=None)  # type: ignore[union-attr]
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        assert asyncio.run(graph.ainvoke({"n": 0, "trail": []}, {"callbacks": [cb]}))["n"] == 3
        # (the lock's wait is 5 s: well under it, with room for a slow host)
        assert time.monotonic() - started < 2.5
        # read back while the lock lasts: what the store has not taken yet, with it
        waiting = cb.trajectory()
        assert waiting.outcome.status.value == "success" and len(waiting.events) > 3
    finally:
        holder.execute("COMMIT")
        holder.close()
    run = cb.trajectory()
    assert run.outcome.status.value == "success"
    assert [e.agent_name for e in run.events if e.type.value == "agent.start"] == [
        "plan", "act", "report",
    ]  # fmt: skip
