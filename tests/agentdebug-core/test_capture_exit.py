"""Runs still open when the process exits end with that said, not "running" for good."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agentdebug.schema import OutcomeStatus
from agentdebug.store import open_store

AGENT = r"""
import sys, threading
from agentdebug import AgentDebug, EventType

dbg = AgentDebug(sys.argv[1])
case = sys.argv[2]
recorded = threading.Event()

def agent():  # a daemon thread's run, still recording when the process ends
    with dbg.trace(goal="in a daemon thread") as t:
        print(t.id, flush=True)
        t.record(EventType.TOOL_CALL, agent_name="worker", input={"q": "x"})
        if case == "daemon-failed":
            t.record(EventType.TOOL_RESULT, agent_name="worker", error=TimeoutError("slow"))
        recorded.set()
        threading.Event().wait()

if case in ("never closed", "marked"):
    t = dbg.trace(goal="never closed")
    print(t.id, flush=True)
    t.record(EventType.TOOL_CALL, agent_name="worker", input={"q": "x"})
    if case == "marked":
        t.set_outcome("success", final_answer="42")
else:
    threading.Thread(target=agent, daemon=True).start()
    recorded.wait()
    if case == "debugger closed":
        dbg.close()  # a service's shutdown, its worker thread still in a run
"""


@pytest.mark.parametrize(
    ("case", "status", "reason"),
    [
        ("daemon", OutcomeStatus.UNKNOWN, "the process exited with the run still open"),
        (
            "daemon-failed",
            OutcomeStatus.FAILURE,
            "1 event(s) carried an error and no final answer was given; "
            "the process exited with the run still open",
        ),
        ("never closed", OutcomeStatus.UNKNOWN, "the process exited with the run still open"),
        ("marked", OutcomeStatus.SUCCESS, "the process exited with the run still open"),
        (
            "debugger closed",
            OutcomeStatus.UNKNOWN,
            "the debugger was closed with the run still open",
        ),
    ],
)
def test_a_run_open_at_exit_is_ended_with_the_exit_said(
    tmp_path: Path, case: str, status: OutcomeStatus, reason: str
) -> None:
    """A run a daemon thread was recording when the program ended (the interpreter
    stops such threads where they stand), or one never closed, ends with the
    outcome it was given or would have had at its close, and the exit in its
    reason (the debugger's close, when it came first, while the store could still
    take it); before, it stayed "running" in the store and in the CLI for good.
    Its events are kept."""
    proc = subprocess.run(
        [sys.executable, "-c", AGENT, str(tmp_path), case],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr  # (no store error)
    run = open_store(tmp_path).load_trajectory(proc.stdout.split()[0])
    assert run.outcome.status is status and run.outcome.reason == reason
    assert run.ended_at is not None
    assert run.events[0].input == {"q": "x"}
