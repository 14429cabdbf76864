"""A run whose process was killed (SIGKILL, the OOM killer, SIGTERM with Python's
default action: no exit hook runs) is not left "running" for good: every run names
the process recording it, and once that process is known gone the run is stored as
ended (outcome unknown, stopped by its process's end), by the CLI before it lists,
shows or diagnoses runs, and by a debugger (a service restarting) when it first
records. A live run, and a run of a process that cannot be seen from here, are left
as they are.

The recorders are real processes, killed for real."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.capture import process
from agentdebug.capture.process import gone, settle_abandoned, this_process
from agentdebug.cli import cli
from agentdebug.schema import EventType, OutcomeStatus
from agentdebug.store import RunQuery, open_store
from click.testing import CliRunner
from test_store_read_only import ROOT, as_reader, read_only, shared  # noqa: F401

# Records a run (a question, a tool call that failed), makes it durable, says so,
# and waits to be killed.
RECORDER = textwrap.dedent(
    """
    import sys, time
    from agentdebug import AgentDebug, EventType
    dbg = AgentDebug(sys.argv[1])
    run = dbg.trace(goal="refund order 42", framework="custom")
    run.record(EventType.USER_INPUT, agent_name="user", input="refund order 42")
    run.record(EventType.TOOL_CALL, agent_name="clerk", module="refund", input={"order": 42})
    run.flush()
    print(run.id, flush=True)
    time.sleep(600)
    """
)


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A live process recording a run into ``tmp_path / "store"``: (process, run id)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(tmp_path / "store")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OTEL_SDK_DISABLED": "true"},
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    try:
        yield proc, run_id
    finally:
        proc.kill()
        proc.wait()


def kill(proc: subprocess.Popen[str], how: int = signal.SIGKILL) -> None:
    proc.send_signal(how)
    proc.wait(timeout=30)


def cli_in(home: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--store", str(home / "store"), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_live_run_stays_running_and_a_killed_ones_is_settled_by_the_cli(
    tmp_path: Path, recorder: tuple[subprocess.Popen[str], str]
) -> None:
    proc, run_id = recorder
    line = next(ln for ln in cli_in(tmp_path, "list").splitlines() if ln.startswith(run_id))
    assert " running " in line  # its process is alive: nothing is settled

    kill(proc, signal.SIGTERM)  # Python's default action: no exit hook writes the end
    stored = open_store(tmp_path / "store").load_trajectory(run_id)
    assert stored.outcome.status is OutcomeStatus.RUNNING  # as the kill left it

    line = next(ln for ln in cli_in(tmp_path, "list").splitlines() if ln.startswith(run_id))
    assert " unknown " in line and " running " not in line
    settled = open_store(tmp_path / "store").load_trajectory(run_id)
    assert settled.outcome.status is OutcomeStatus.UNKNOWN
    assert settled.outcome.stopped_by == "the recording process ended"
    assert f"pid {proc.pid} on {socket.gethostname()}" in (settled.outcome.reason or "")
    assert [e.type for e in settled.events] == [EventType.USER_INPUT, EventType.TOOL_CALL]

    shown = cli_in(tmp_path, "show", run_id)
    assert "abandoned" in shown and f"pid {proc.pid}" in shown
    # nothing failed in what it recorded: no one is blamed for the kill
    diagnosis = cli_in(tmp_path, "diagnose", run_id)
    assert "Root cause: none named (the run was stopped before it ended" in diagnosis
    assert "the recording process ended" in diagnosis and "has not ended" not in diagnosis


def test_a_restarted_service_settles_what_its_predecessor_left(
    tmp_path: Path, recorder: tuple[subprocess.Popen[str], str]
) -> None:
    proc, killed = recorder
    kill(proc)
    dbg = AgentDebug(tmp_path / "store")
    with dbg.trace(goal="next request") as run:  # the service's first run after the restart
        run.record(EventType.USER_INPUT, agent_name="user", input="hi")
    dbg.close()  # (waits for the settling, done off the agent's thread)
    store = open_store(tmp_path / "store")
    assert store.load_trajectory(killed).outcome.status is OutcomeStatus.UNKNOWN
    assert store.load_trajectory(run.id).outcome.status is not OutcomeStatus.RUNNING
    assert not store.list_runs(RunQuery(status="running"))


def test_the_stamp_names_this_process() -> None:
    stamp = this_process()
    assert stamp["host"] == socket.gethostname() and stamp["pid"] == str(os.getpid())
    assert gone(stamp) is None  # this very process is alive
    dbg = AgentDebug(None)
    with dbg.trace(goal="x") as run:
        pass
    assert run.trajectory().metadata["recorded_by"] == stamp


def test_what_can_and_cannot_be_known_gone() -> None:
    here = this_process()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert "ended before the run did" in (gone({**here, "pid": str(dead.pid)}) or "")
    parent = {**here, "pid": str(os.getppid()), "started": "1"}  # alive, but started later
    if "started" in here:
        assert "reused" in (gone(parent) or "")
    # another machine, another pid namespace (a container on the host's network has
    # the host's name): its pids are not ours to look up
    assert gone({**here, "host": "elsewhere", "pid": str(dead.pid)}) is None
    assert gone({**here, "pidns": "pid:[1]", "pid": str(dead.pid)}) is None
    assert gone({"host": here["host"], "pid": "not a pid"}) is None
    if "boot" in here:
        assert "restarted" in (gone({**here, "boot": "another-boot"}) or "")
    assert gone(None) is None


def test_settling_leaves_other_runs_alone(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path / "store")
    with dbg.trace(goal="done") as done:
        pass
    live = dbg.trace(goal="still going")
    live.flush()
    assert settle_abandoned(dbg.store) == {}
    statuses = {s.id: s.status for s in dbg.store.list_runs()}
    assert statuses[live.id] == "running" and statuses[done.id] != "running"
    live.close()
    dbg.close()


def test_a_read_only_store_shows_the_run_abandoned_and_keeps_it_as_stored(
    shared: Path,  # noqa: F811
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(shared / "store")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    kill(proc)
    read_only(shared / "store")
    listed = as_reader("list", home=shared)
    assert listed.returncode == 0, listed.stderr
    assert " abandoned " in next(ln for ln in listed.stdout.splitlines() if run_id in ln)
    shown = as_reader("show", run_id, home=shared)
    assert shown.returncode == 0, shown.stderr
    assert "was abandoned" in shown.stderr and "read-only" in shown.stderr
    assert "has not ended" not in as_reader("diagnose", run_id, home=shared).stderr
    stored = open_store(shared / "store").load_trajectory(run_id)
    assert stored.outcome.status is OutcomeStatus.RUNNING  # nothing was written


def test_the_stamp_is_made_again_in_a_forked_child() -> None:
    before = this_process()
    pid = os.fork()
    if pid == 0:  # the child: its own pid in its stamp
        os._exit(0 if process.this_process()["pid"] == str(os.getpid()) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert this_process() == before


def test_prune_settles_an_abandoned_run_and_can_then_delete_it(
    tmp_path: Path, recorder: tuple[subprocess.Popen[str], str]
) -> None:
    proc, run_id = recorder
    kill(proc)
    out = cli_in(tmp_path, "prune", "--status", "unknown", "--yes")
    assert "1 run" in out, out
    assert run_id not in {r.id for r in open_store(tmp_path / "store").list_runs()}


def test_a_json_lines_store_is_settled_by_the_cli_not_at_capture(tmp_path: Path) -> None:
    """Settling a JSON Lines store reads the whole file: a service's first capture
    does not (it would hold the agent up), the CLI does."""
    store = tmp_path / "store" / "runs.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(store)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    kill(proc)
    dbg = AgentDebug(store)
    with dbg.trace(goal="next request") as run:
        run.record(EventType.USER_INPUT, agent_name="user", input="hi")
    dbg.close()
    assert open_store(store).load_trajectory(run_id).outcome.status is OutcomeStatus.RUNNING
    result = CliRunner().invoke(cli, ["--store", str(store), "list"])
    assert result.exit_code == 0 and " unknown " in result.output
    assert open_store(store).load_trajectory(run_id).outcome.status is OutcomeStatus.UNKNOWN


def test_a_run_that_ended_while_it_was_being_judged_keeps_its_end(tmp_path: Path) -> None:
    """Its process wrote the run's end and exited between settling's listing and
    its look at the process (a rolling restart's old worker finishing its last
    run): the end it wrote stays."""
    import dataclasses

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom agentdebug import AgentDebug\n"
            "dbg = AgentDebug(sys.argv[1])\n"
            "with dbg.trace(goal='last request') as run:\n"
            "    run.set_outcome('success', final_answer='done')\n"
            "print(run.id)",
            str(tmp_path / "store"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = done.stdout.strip()
    store = open_store(tmp_path / "store")

    class Stale:  # the first listing was made while the run was still running
        def __init__(self) -> None:
            self.asked = 0

        def list_runs(self, query: RunQuery) -> list[Any]:
            self.asked += 1
            runs = store.list_runs(RunQuery(metadata=query.metadata, limit=None))
            if self.asked == 1:
                return [dataclasses.replace(r, status="running") for r in runs]
            return store.list_runs(query)

        def finish_run(self, *args: Any) -> None:
            store.finish_run(*args)

    assert settle_abandoned(Stale()) == {}  # type: ignore[arg-type]
    kept = store.load_trajectory(run_id).outcome
    assert kept.status is OutcomeStatus.SUCCESS and kept.final_answer == "done"


def test_a_restart_is_told_by_the_machine_not_its_name() -> None:
    here = this_process()
    if "boot" not in here or "machine" not in here:
        pytest.skip("this machine has no boot id or machine id to read")
    restarted = {**here, "boot": "another-boot"}
    assert "restarted" in (gone(restarted) or "")
    # a clone of the same name (another machine id) sharing the store: not ours to judge
    assert gone({**restarted, "machine": "another-machine"}) is None
    assert gone({k: v for k, v in restarted.items() if k != "machine"}) is None
