"""`agentdebug prune`: old runs leave the store whole families at a time, and only
when asked plainly; a JSON Lines store written by another process loses nothing.

The store is real (SQLite, and JSON Lines) and the command runs as a user runs it
(a subprocess), except where a store without ``delete_runs`` is put in its place."""

from __future__ import annotations

import os
import pty
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    EventType,
    GoldLabel,
    Outcome,
    OutcomeStatus,
)
from agentdebug.store import JSONLStore, RunQuery, RunSummary, TraceStore, open_store
from agentdebug.store.retention import Retention, select
from test_store_read_only import become_nobody, shared  # noqa: F401 - a folder other users can reach

NOW = datetime.now(UTC)
ROOT = os.geteuid() == 0
KINDS = ["sqlite", "jsonl"]


def agentdebug(
    *args: str, store: Path, stdin: Any = subprocess.DEVNULL, user: str = "me"
) -> subprocess.CompletedProcess[str]:
    """The real command on ``store``, stdin not a terminal (as in cron, CI), run
    by ``nobody`` when ``user`` is "other" and the tests run as root."""
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", "--store", str(store), *args],
        capture_output=True,
        text=True,
        stdin=stdin,
        timeout=120,
        check=False,
        preexec_fn=become_nobody if user == "other" and ROOT else None,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    err = result.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def store_path(folder: Path, kind: str) -> Path:
    return folder / "runs.jsonl" if kind == "jsonl" else folder / "store"


def put(
    store: TraceStore,
    run_id: str,
    days_ago: float,
    status: str = "success",
    *,
    parent: str | None = None,
    continues: str | None = None,
    events: int = 3,
    started: bool = True,
) -> None:
    """A run that ended ``days_ago`` (still running: started then), with a report
    and a label when it failed."""
    end = NOW - timedelta(days=days_ago)
    store.save_trajectory(
        AgentTrajectory(
            id=run_id,
            goal=f"goal of {run_id}",
            framework="toy",
            parent_id=parent,
            metadata={"continues": continues} if continues else {},
            started_at=end - timedelta(minutes=1) if started else None,
            ended_at=None if status == "running" or not started else end,
            outcome=Outcome(status=OutcomeStatus(status)),
            events=[
                AgentEvent(
                    id=f"e{i}",
                    type=EventType.LLM_RESPONSE if i else EventType.USER_INPUT,
                    step_index=i,
                    agent_name="worker",
                    output=f"{run_id} step {i} " + "x" * 200,
                )
                for i in range(events)
            ],
        ),
        GoldLabel(source="test", agent_name="worker", step_index=1)
        if status == "failure"
        else None,
    )
    if status == "failure":
        store.save_report(diagnose(store.load_trajectory(run_id)))


def seed(store: TraceStore) -> None:
    """Three old families, each of two runs, and two runs of their own."""
    put(store, "gone-a", 40, "failure")  # old, its rerun old too: both go
    put(store, "gone-a-rerun", 39, parent="gone-a")
    put(store, "held-b", 40)  # old, but its rerun is new: both stay
    put(store, "new-b-rerun", 1, parent="held-b")
    put(store, "held-c", 40)  # old, but a run continues it recently: both stay
    put(store, "new-c-resume", 1, continues="held-c")
    put(store, "recent", 1)
    put(store, "old-running", 40, "running")  # never pruned


def ids(store: Path) -> set[str]:
    listed = agentdebug("list", "--json", "--limit", "1000", store=store)
    assert listed.returncode == 0, listed.stderr
    return {line.split('"id":"')[1].split('"')[0] for line in listed.stdout.splitlines()}


EVERY = {
    "gone-a",
    "gone-a-rerun",
    "held-b",
    "new-b-rerun",
    "held-c",
    "new-c-resume",
    "recent",
    "old-running",
}


@pytest.fixture(params=KINDS)
def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    where = store_path(tmp_path, request.param)
    store = open_store(where)
    seed(store)
    store.close()
    return where


# -- what goes, what stays ----------------------------------------------------------------


def test_old_families_go_whole_and_families_with_a_new_run_stay(seeded: Path) -> None:
    done = agentdebug("prune", "--older-than", "30d", "--yes", store=seeded)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("pruned 2 run(s) in 1 family from ")
    assert "2 matching run(s) kept, in 2 families with a run that does not match" in done.stdout
    assert len(done.stdout.strip().splitlines()) == 1
    assert ids(seeded) == EVERY - {"gone-a", "gone-a-rerun"}
    for run_id in ("gone-a", "gone-a-rerun"):
        err = one_line_error(agentdebug("show", run_id, store=seeded))
        assert err.startswith(f"error: no run with id '{run_id}' in "), err
    shown = agentdebug("show", "new-b-rerun", store=seeded)
    assert shown.returncode == 0 and "held-b" in shown.stdout, shown.stderr
    assert "goal of held-c" in agentdebug("show", "held-c", store=seeded).stdout
    # the failure mode its report found lists nothing now: the report went with the run
    assert agentdebug("list", "--status", "failure", store=seeded).stdout == ""


def test_nothing_of_a_pruned_run_is_left_in_the_files(seeded: Path) -> None:
    store = open_store(seeded)
    assert store.load_reports("gone-a") and store.load_label("gone-a") is not None
    store.close()
    assert agentdebug("prune", "--older-than", "30d", "--yes", store=seeded).returncode == 0
    if seeded.suffix == ".jsonl":
        text = seeded.read_text()
        assert '"gone-a"' not in text and '"gone-a-rerun"' not in text
        assert '"held-b"' in text and '"recent"' in text
        return
    db = sqlite3.connect(seeded / "agentdebug.db")
    try:
        for table in ("runs", "run_agents", "reports", "report_modes", "labels"):
            column = "id" if table == "runs" else "run_id"
            found = db.execute(
                f"SELECT count(*) FROM {table} WHERE {column} LIKE 'gone-a%'"
            ).fetchone()[0]
            assert found == 0, table
        events = db.execute("SELECT count(*) FROM events").fetchone()[0]
        assert events == 6 * 3  # the six runs left, three events each
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


def test_keep_last_status_and_keep_failed_narrow_the_choice(seeded: Path) -> None:
    # the two newest runs by start stay, and the runs of their families with them
    dry = agentdebug("prune", "--keep-last", "3", "--dry-run", store=seeded)
    assert dry.returncode == 0, dry.stderr
    assert "would prune 2 run(s) in 1 family" in dry.stdout  # (gone-a's family only)
    kept = agentdebug("prune", "--older-than", "30d", "--keep-failed", "--yes", store=seeded)
    assert kept.stdout.startswith("nothing to prune in "), kept.stdout
    assert ids(seeded) == EVERY
    only = agentdebug("prune", "--status", "unknown", "--yes", store=seeded)
    assert only.stdout.startswith("nothing to prune in "), only.stdout
    gone = agentdebug("prune", "--keep-last", "3", "--yes", store=seeded)
    assert gone.stdout.startswith("pruned 2 run(s) in 1 family"), gone.stdout
    assert ids(seeded) == EVERY - {"gone-a", "gone-a-rerun"}


def test_a_dry_run_lists_what_would_go_and_deletes_nothing(seeded: Path) -> None:
    before = seeded.read_bytes() if seeded.suffix == ".jsonl" else None
    dry = agentdebug("prune", "--older-than", "30d", "--dry-run", store=seeded)
    assert dry.returncode == 0, dry.stderr
    listed = [line.split()[0] for line in dry.stdout.splitlines()[1:-1]]
    assert listed == ["gone-a-rerun", "gone-a"]
    assert dry.stdout.splitlines()[-1].startswith("would prune 2 run(s) in 1 family from ")
    assert "nothing deleted" in dry.stdout
    assert ids(seeded) == EVERY
    if before is not None:
        assert seeded.read_bytes() == before


# -- refusals -------------------------------------------------------------------------------


def test_no_selector_is_refused(seeded: Path) -> None:
    for extra in ([], ["--keep-failed"], ["--dry-run"]):
        err = one_line_error(agentdebug("prune", "--yes", *extra, store=seeded))
        assert err == (
            "error: prune needs --older-than AGE, --keep-last N or --status STATUS: with "
            "none of them every finished run would be deleted"
        )
    assert ids(seeded) == EVERY


def test_without_yes_and_without_a_terminal_it_refuses(seeded: Path) -> None:
    err = one_line_error(agentdebug("prune", "--older-than", "30d", store=seeded))
    assert err == (
        "error: no terminal to confirm on: add --yes to delete without asking "
        "(or --dry-run to list what would go)"
    )
    assert ids(seeded) == EVERY


@pytest.mark.parametrize("answer", ["n", "y"])
def test_on_a_terminal_it_asks_with_the_count(seeded: Path, answer: str) -> None:
    main, terminal = pty.openpty()
    try:
        os.write(main, f"{answer}\n".encode())
        done = agentdebug("prune", "--older-than", "30d", store=seeded, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(main)
    assert "Delete 2 run(s) in 1 family from " in done.stdout
    if answer == "n":
        assert done.returncode == 1 and done.stderr.strip() == "aborted"
        assert ids(seeded) == EVERY
    else:
        assert done.returncode == 0, done.stderr
        assert "pruned 2 run(s) in 1 family" in done.stdout
        assert ids(seeded) == EVERY - {"gone-a", "gone-a-rerun"}


def test_bad_input_is_one_clear_line(seeded: Path) -> None:
    err = one_line_error(agentdebug("prune", "--older-than", "a month", "--yes", store=seeded))
    assert err.startswith("error: field '--older-than': 'a month' is neither an ISO date")
    err = one_line_error(
        agentdebug("prune", "--status", "failure", "--keep-failed", "--yes", store=seeded)
    )
    assert err == "error: field '--status': --keep-failed with --status failure selects nothing"
    for bad in (["--keep-last", "0"], ["--status", "running"]):
        done = agentdebug("prune", *bad, "--yes", store=seeded)
        assert done.returncode == 2 and "Invalid value for" in done.stderr
        assert "Traceback" not in done.stderr
    missing = one_line_error(
        agentdebug("prune", "--older-than", "1d", "--yes", store=seeded.parent / "nowhere")
    )
    assert "no agentdebug store here" in missing
    assert ids(seeded) == EVERY


@pytest.mark.parametrize("kind", KINDS)
def test_a_store_this_user_cannot_write_is_not_pruned(shared: Path, kind: str) -> None:  # noqa: F811
    (shared / "s").mkdir()
    where = store_path(shared / "s", kind)
    store = open_store(where)
    seed(store)
    store.close()
    for path in (shared / "s").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o444)
    (shared / "s").chmod(0o555)
    done = agentdebug("prune", "--older-than", "30d", "--yes", store=where, user="other")
    err = one_line_error(done)
    assert "the store is open read-only (this user cannot write the file)" in err, err
    assert "copy it somewhere writable" in err
    dry = agentdebug("prune", "--older-than", "30d", "--dry-run", store=where, user="other")
    assert dry.returncode == 0 and "would prune 2 run(s)" in dry.stdout, dry.stderr
    assert ids(where) == EVERY


def test_a_jsonl_store_in_a_folder_this_user_cannot_write_is_not_pruned(shared: Path) -> None:  # noqa: F811
    """The file may be written (appends), but a prune writes a new file beside it."""
    (shared / "s").mkdir()
    where = shared / "s" / "runs.jsonl"
    store = open_store(where)
    seed(store)
    store.close()
    where.chmod(0o666)
    (shared / "s").chmod(0o555)
    err = one_line_error(
        agentdebug("prune", "--older-than", "30d", "--yes", store=where, user="other")
    )
    assert "this user cannot write its folder, where a prune writes the file anew" in err, err
    assert ids(where) == EVERY


def test_a_store_without_delete_runs_says_so(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store of one's own need not delete runs: prune says so and deletes nothing."""
    import agentdebug.cli.app as app
    from agentdebug.cli import main

    store = open_store(home)
    seed(store)

    class ListsOnly:  # what a minimal store of one's own has, for prune
        location = "acme://runs"

        def list_runs(self, query: RunQuery | None = None) -> list[RunSummary]:
            return store.list_runs(query)

    monkeypatch.setattr(app, "open_store", lambda location=None: ListsOnly())
    with pytest.raises(SystemExit) as exit_:
        main(["prune", "--older-than", "30d", "--yes"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.strip() == (
        "error: acme://runs: this store (ListsOnly) cannot delete runs (it has no "
        "delete_runs); nothing was deleted"
    )
    assert {r.id for r in store.list_runs(RunQuery(limit=None))} == EVERY
    store.close()


# -- space, and a writer in another process ------------------------------------------------------


def on_disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("agentdebug.db"))


def test_vacuum_gives_the_space_back(tmp_path: Path) -> None:
    where = tmp_path / "store"
    store = open_store(where)
    for n in range(150):
        put(store, f"run{n:03d}", 40 if n < 50 else 20 if n < 100 else 1, events=40)
    store.close()
    full = on_disk(where)
    kept = agentdebug("prune", "--older-than", "30d", "--yes", store=where)
    assert kept.returncode == 0, kept.stderr
    assert "the file keeps its size (SQLite reuses the space; --vacuum frees it)" in kept.stdout
    assert on_disk(where) >= full  # (deleted rows leave free pages in the file)
    # --vacuum gives back what an earlier prune left, with no run to delete now
    later = agentdebug("prune", "--older-than", "35d", "--vacuum", "--yes", store=where)
    assert later.returncode == 0, later.stderr
    assert later.stdout.startswith("nothing to prune in ") and "iB freed" in later.stdout
    assert on_disk(where) < full * 0.8
    freed = agentdebug("prune", "--older-than", "10d", "--vacuum", "--yes", store=where)
    assert freed.returncode == 0, freed.stderr
    assert freed.stdout.startswith("pruned 50 run(s) in 50 families")
    assert "iB freed" in freed.stdout
    assert on_disk(where) < full * 0.45  # a third of the runs left
    assert len(ids(where)) == 50


WRITER = """
import sys, time
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.store import JSONLStore
store = JSONLStore(sys.argv[1])
for n in range(int(sys.argv[2])):
    events = [AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="hi")]
    store.save_trajectory(AgentTrajectory(id=f"w{n:04d}", goal="new", events=events))
    if n == 0:
        print("writing", flush=True)
    time.sleep(0.002)
store.close()
"""


def test_a_jsonl_prune_keeps_what_another_process_appends(tmp_path: Path) -> None:
    where = tmp_path / "runs.jsonl"
    store = JSONLStore(where)
    for n in range(200):
        put(store, f"old{n:03d}", 40, events=20)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(where), "400"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    pruned = 0
    while writer.poll() is None and pruned < 150:  # a prune (a new file) at a time
        assert store.delete_runs([f"old{pruned:03d}"]) == 1
        pruned += 1
    _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert pruned >= 3, "the writer finished before the prunes could overlap it"
    store.close()
    again = JSONLStore(where)  # (what a fresh reader finds in the file)
    found = {r.id for r in again.list_runs(RunQuery(limit=None))}
    assert {f"w{n:04d}" for n in range(400)} <= found
    assert found == {f"w{n:04d}" for n in range(400)} | {f"old{n:03d}" for n in range(pruned, 200)}
    assert again.skipped_lines == []
    assert len(again.load_trajectory(f"old{199:03d}").events) == 20
    again.close()


def test_a_reader_open_across_a_prune_reads_the_new_file(tmp_path: Path) -> None:
    """A store open in another process (a console, a service) sees the prune and
    what is appended after it, not a mix of the old file and the new."""
    where = tmp_path / "runs.jsonl"
    reader = JSONLStore(where)
    pruner = JSONLStore(where)
    for n in range(6):
        put(pruner, f"r{n}", 40 if n < 3 else 1)
    assert len(reader.list_runs(RunQuery(limit=None))) == 6
    assert pruner.delete_runs(["r0", "r1", "r2"]) == 3
    for n in range(6, 12):  # the new file grows past where the reader had read to
        put(reader, f"r{n}", 1, events=12)
    assert {r.id for r in reader.list_runs(RunQuery(limit=None))} == {f"r{n}" for n in range(3, 12)}
    assert {r.id for r in pruner.list_runs(RunQuery(limit=None))} == {f"r{n}" for n in range(3, 12)}
    reader.close()
    pruner.close()


# -- the choice itself ------------------------------------------------------------------------


def summary(run_id: str, days_ago: float | None, status: str = "success", **kw: Any) -> RunSummary:
    when = NOW - timedelta(days=days_ago) if days_ago is not None else None
    return RunSummary(
        id=run_id,
        goal=None,
        framework=None,
        status=status,
        started_at=when,
        ended_at=when,
        n_events=1,
        agents=[],
        parent_id=kw.get("parent"),
        failure_modes=[],
        root_agent=None,
        root_step=None,
        continues=kw.get("continues"),
    )


def chosen(runs: list[RunSummary], **options: Any) -> list[str]:
    return sorted(select(runs, Retention(**options), NOW).run_ids)


def test_a_family_goes_only_whole_through_chains_of_links() -> None:
    runs = [
        summary("a", 50),
        summary("a1", 45, parent="a"),
        summary("a2", 44, parent="a1"),  # a branch of a branch
        summary("a3", 2, continues="a2"),  # a resume of the branch: new
        summary("b", 50),
        summary("b1", 45, continues="b"),
        summary("c", 50, parent="gone-long-ago"),  # a link out of the store: ignored
    ]
    plan = select(runs, Retention(older_than=timedelta(days=30)), NOW)
    assert sorted(plan.run_ids) == ["b", "b1", "c"]
    assert plan.families == 2
    assert sorted(r.id for r in plan.held) == ["a", "a1", "a2"] and plan.held_families == 1
    batches = plan.batches(2)
    assert sorted(map(sorted, batches)) == [["b", "b1"], ["c"]]


def test_running_and_undated_runs_never_go_and_failures_may_be_kept() -> None:
    runs = [
        summary("ok", 50),
        summary("bad", 50, "failure"),
        summary("live", 50, "running"),
        summary("undated", None),
        summary("odd", 50, "unknown"),
    ]
    assert chosen(runs, older_than=timedelta(days=1)) == ["bad", "odd", "ok"]
    assert chosen(runs, older_than=timedelta(days=1), keep_failed=True) == ["odd", "ok"]
    assert chosen(runs, statuses={"failure", "unknown"}) == ["bad", "odd"]
    assert chosen(runs, statuses={"running"}) == []
    assert chosen(runs, older_than=timedelta(days=60)) == []


def test_keep_last_keeps_the_newest_runs_and_their_families() -> None:
    runs = [summary(f"r{n}", 10 - n) for n in range(10)]  # r9 the newest
    runs.append(summary("r0-rerun", 0.5, parent="r0"))  # the newest of all
    assert chosen(runs, keep_last=3) == [f"r{n}" for n in range(1, 8)]
    assert chosen(runs, keep_last=3, older_than=timedelta(days=4.5)) == [
        f"r{n}" for n in range(1, 6)
    ]
    with pytest.raises(ValueError):
        Retention(keep_last=-1)


def test_keep_last_with_a_status_keeps_the_newest_of_that_status() -> None:
    """A burst of failures does not make the newest successes count as old:
    ``--status success --keep-last 2`` keeps the two newest successes."""
    runs = [summary(f"ok{n}", 10 - n) for n in range(5)]  # ok4 the newest success
    runs += [summary(f"bad{n}", 1 - n / 10, "failure") for n in range(5)]  # newer still
    assert chosen(runs, statuses={"success"}, keep_last=2) == ["ok0", "ok1", "ok2"]


def test_vacuum_says_what_it_freed_while_a_service_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs written by another process while the prune ran (here: between its
    measuring the files and its deletes) grow the file past what the prune gave
    back: before, the difference of the files' sizes, taken as never below zero,
    read "0 B freed" after deleting 5,001 runs."""
    import agentdebug.cli.prune as prune_module
    from agentdebug.cli import main

    where = tmp_path / "store"
    store = open_store(where)
    for n in range(60):
        put(store, f"run{n:03d}", 40 if n < 50 else 1, events=40)
    store.close()
    deleting = prune_module._delete

    def while_a_service_writes(*args: Any) -> int:
        service = open_store(where)  # another process's store, writing a big run
        put(service, "written-meanwhile", 0.1, events=8000)  # (more than is pruned)
        service.close()
        return deleting(*args)

    monkeypatch.setattr(prune_module, "_delete", while_a_service_writes)
    main(["--store", str(where), "prune", "--older-than", "30d", "--vacuum", "--yes"])
    said = capsys.readouterr().out
    assert said.startswith("pruned 50 run(s) in 50 families"), said
    freed = float(said.split("; ")[1].split(" KiB freed")[0])
    assert freed > 300, said  # (50 runs of 40 events of 200-odd bytes, in 16 KiB pages)
    assert "pages fewer" in said
    assert "the store grew by " in said and "other processes wrote runs while it pruned" in said
    assert len(ids(where)) == 11


KILLED = """
import sys, time
from agentdebug import AgentDebug, EventType
dbg = AgentDebug(sys.argv[1])
t = dbg.trace(goal="killed run", framework="x").__enter__()
t.record(EventType.TOOL_CALL, agent_name="a", output="call")
t.flush()
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_dry_run_lists_the_abandoned_run_the_prune_would_settle_and_delete(
    tmp_path: Path, kind: str
) -> None:
    """A recorder killed mid-run leaves its run "running"; a prune settles it (ended,
    outcome unknown) and then may delete it. The dry run listed none of that
    ("would prune 0"), and the prune then deleted the run (a review's find)."""
    store = store_path(tmp_path, kind)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(store)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.kill()
    proc.wait(timeout=30)
    dry = agentdebug("prune", "--status", "unknown", "--dry-run", store=store)
    assert dry.returncode == 0, dry.stderr
    assert "would prune 1 run(s)" in dry.stdout and "killed run" in dry.stdout
    assert "(start)" in dry.stdout  # (it never ended: its start is what is shown)
    (run,) = open_store(store).list_runs(RunQuery())
    assert run.status == "running"  # (a dry run writes nothing)
    done = agentdebug("prune", "--status", "unknown", "--yes", store=store)
    assert "pruned 1 run(s)" in done.stdout, (done.stdout, done.stderr)
