"""A store this user cannot write (a colleague's file, a service's, a read-only
mount) is read, not refused: the commands that read work, `diagnose` shows its
report without storing it, a write says why it cannot be made, and reading leaves
nothing behind that would stop the owner writing.

The reader is a real other user: the tests run the CLI as ``nobody`` when they run
as root (root may write anything), else as this user with the permissions taken away."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentdebug import AgentDebug
from agentdebug.store import open_store
from toy_agent import failing_run

NOBODY = 65534
ROOT = os.geteuid() == 0


def become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@functools.cache
def _nobody_cannot_run_python() -> str | None:
    """Why ``nobody`` cannot run this Python (a pyenv build whose shared library
    sits under root's private home, where no system copy stands in), or None."""
    if not ROOT:
        return None
    proc = subprocess.run(
        [sys.executable, "-c", ""],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=become_nobody,
        check=False,
    )
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"exit {proc.returncode}")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder other users can reach (pytest's own temporary folders are private);
    the test is skipped, saying why, where the other user cannot run this Python."""
    why = _nobody_cannot_run_python()
    if why is not None:
        pytest.skip(f"another user (nobody) cannot run {sys.executable} here: {why}")
    where = Path(tempfile.mkdtemp(prefix="agentdebug-ro-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        for path in [where, *where.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(where)


def as_reader(
    *args: str, home: Path, code: str | None = None, store: str = "store"
) -> subprocess.CompletedProcess[str]:
    """The real `agentdebug` command (or Python ``code``), run by a user who cannot
    write ``home``, on its ``store`` (a folder, or a .jsonl file)."""
    env = {
        **os.environ,
        "AGENTDEBUG_HOME": str(home / store),
        "AGENTDEBUG_CONFIG": str(home / "no-config.toml"),
        "HOME": str(home),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args]
        if code
        else [sys.executable, "-m", "agentdebug", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=become_nobody if ROOT else None,
        check=False,
    )


def read_only(store: Path) -> None:
    for path in store.iterdir():
        path.chmod(0o444)
    store.chmod(0o555)


def stored_run(home: Path, store: str = "store") -> str:
    (home / "store").mkdir(exist_ok=True)
    dbg = AgentDebug(home / store)
    run = failing_run(dbg)
    dbg.close()
    return run.id


@pytest.mark.parametrize("kind", ["store", "store/runs.jsonl"])
def test_a_store_this_user_cannot_write_is_read(shared: Path, kind: str) -> None:
    run_id = stored_run(shared, kind)
    store = shared / "store"
    read_only(store)
    before = sorted(p.name for p in store.iterdir())

    listed = as_reader("list", home=shared, store=kind)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout
    shown = as_reader("show", run_id, home=shared, store=kind)
    assert shown.returncode == 0 and run_id in shown.stdout, shown.stderr

    diagnosed = as_reader("diagnose", run_id, home=shared, store=kind)
    assert diagnosed.returncode == 0, diagnosed.stderr
    assert "Root cause" in diagnosed.stdout
    assert "is read-only here (this user cannot write the file)" in diagnosed.stderr
    assert "the diagnosis is shown, not stored" in diagnosed.stderr

    ingested = as_reader(
        "ingest",
        str(Path(__file__).parents[2] / "examples/failed_booking.json"),
        home=shared,
        store=kind,
    )
    assert ingested.returncode != 0
    assert (
        "the store is open read-only (this user cannot write the file)"
        in ingested.stdout + ingested.stderr
    )
    assert "Traceback" not in ingested.stderr

    # nothing made beside the file (an index made by the reader would be its, not
    # writable by the owner), and the owner still writes it
    assert sorted(p.name for p in store.iterdir()) == before
    for path in [store, *store.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    owner = open_store(str(shared / kind))
    assert owner.read_only is None and not owner.load_reports(run_id)  # type: ignore[attr-defined]
    owner.close()  # (the report was shown, not stored)


def test_a_read_only_store_is_read_while_its_owner_writes(shared: Path) -> None:
    """The owner has the store open (its write-ahead log's index is there): the
    reader reads through it, the run the owner just wrote included."""
    stored_run(shared)
    store = shared / "store"
    owner = AgentDebug(store)
    with owner.trace(goal="written while read") as session:
        session.record("user_input", agent_name="user", input="hi")
    owner.flush()
    assert (store / "agentdebug.db-shm").exists()
    if not ROOT:  # (root's files are not nobody's to write already)
        read_only(store)
    try:
        listed = as_reader("list", home=shared)
        assert listed.returncode == 0, listed.stderr
        assert "written while read" in listed.stdout
    finally:
        for path in [store, *store.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        owner.close()


WRITE = """
import sys
from agentdebug.errors import StoreError
from agentdebug.store import open_store
store = open_store(sys.argv[1])
print("read_only:", store.read_only)
run = store.load_trajectory(sys.argv[2])
try:
    store.save_trajectory(run)
except StoreError as exc:
    print("refused:", exc)
store.close()
"""


def test_a_write_to_a_read_only_store_says_why_in_python_too(shared: Path) -> None:
    run_id = stored_run(shared)
    store = shared / "store"
    read_only(store)
    done = as_reader(str(store / "agentdebug.db"), run_id, home=shared, code=WRITE)
    assert done.returncode == 0, done.stderr
    assert "read_only: this user cannot write the file" in done.stdout
    assert "refused: " in done.stdout and "the store is open read-only" in done.stdout
    assert "copy it somewhere writable" in done.stdout
    assert sorted(p.name for p in store.iterdir()) == ["agentdebug.db"]


RECORD = """
import logging, time
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
from agentdebug import AgentDebug, EventType
dbg = AgentDebug()
start = time.monotonic()
for n in range(20):
    with dbg.trace(goal=f"run {n}") as t:
        t.record(EventType.PLAN, agent_name="planner", output="plan")
        t.record(EventType.TOOL_RESULT, agent_name="planner", error="timeout")
took = time.monotonic() - start
print(f"took {took:.2f}", [e.output for e in t.trajectory().events])
print("blamed", t.analyze().root_cause.agent_name)
"""


@pytest.mark.parametrize("kind", ["store", "store/runs.jsonl"])
def test_an_agent_recording_into_a_read_only_store_is_told_once_and_not_slowed(
    shared: Path, kind: str
) -> None:
    """Before: each run retried its writes for 0.75 s and logged an ERROR, since
    the failure was remembered per run rather than per store."""
    stored_run(shared, kind)
    read_only(shared / "store")
    done = as_reader(home=shared, store=kind, code=RECORD)
    assert done.returncode == 0, done.stderr
    took = float(done.stdout.split()[1])
    assert took < 5, done.stdout  # (before: 15 s, 0.75 s a run)
    assert "['plan', None]" in done.stdout  # each run kept in memory
    assert "blamed planner" in done.stdout  # analyze works, its report not stored: said
    # once already (before, an ERROR: "report ... not stored: ... readonly database")
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1, done.stderr
    said = warnings[0]
    assert "cannot be written here (this user cannot write the file); runs are kept in " in said
    assert "memory only (analyze works), nothing is saved to it" in said
    assert "ERROR" not in done.stderr, done.stderr


DIAGNOSE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
from agentdebug import AgentDebug
dbg = AgentDebug()
report = dbg.diagnose(dbg.store.load_trajectory(sys.argv[1]))
print("blamed", report.root_cause.agent_name)
"""


def test_a_debugger_that_only_diagnoses_a_read_only_stores_run_says_no_error(
    shared: Path,
) -> None:
    """No capture in the process, so no writer to know the store is read-only.
    Before: an ERROR line, "report ... not stored: ... give --store a writable
    location" (a command-line hint, in a library)."""
    run_id = stored_run(shared)
    read_only(shared / "store")
    done = as_reader(run_id, home=shared, code=DIAGNOSE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("blamed "), done.stdout
    assert "ERROR" not in done.stderr, done.stderr
