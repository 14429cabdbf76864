"""`agentdebug list` marks each run's root cause with what the closed loop's rerun
said of it (✓ verified, ✗ not confirmed, → the blame a later round's passing
branch corrected), from columns of the reports table (SQLite) or the report it
holds (JSON Lines); a SQLite file from before those columns opens and lists, the
marks empty until a report is stored again."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.schema import DiagnosticReport, Hypothesis
from agentdebug.schema.diagnosis import Verification
from agentdebug.store import JSONLStore, SQLiteStore
from agentdebug.store.base import LaterBlame, verdict_of
from agentdebug.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, columns_of
from conftest import run_cli
from test_store import make_run
from toy_agent import failing_run

HERE = Path(__file__).resolve().parent
ENV = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
NEW_COLUMNS = {"verified", "later_round", "later_branch", "later_run", "later_agent", "later_step"}


def _loop(store: Path, executor: str, *more: str) -> str:
    """A failing toy run stored in ``store``, and `agentdebug act --rerun` on it."""
    dbg = AgentDebug(store)
    run = failing_run(dbg)
    dbg.close()
    done = run_cli(
        *("--store", str(store), "act", run.id, "--rerun", "--policy", "auto"),
        *("--executor", executor, *more),
        env=ENV,
    )
    assert done.returncode in (0, 2), done.stderr
    return run.id


def _listed(store: Path, run_id: str) -> tuple[str, dict[str, Any]]:
    """The run's ROOT CAUSE column of `agentdebug list` (28 characters, found by its
    heading), and its object of `list --json`."""
    text = run_cli("--store", str(store), "list")
    assert text.returncode == 0, text.stderr
    heading, *lines = text.stdout.splitlines()
    (line,) = [ln for ln in lines if ln.startswith(run_id)]
    at = heading.index("ROOT CAUSE")
    assert heading[at + 28 : at + 33] == " GOAL" and line[at + 28] == " "
    as_json = run_cli("--store", str(store), "list", "--json").stdout.splitlines()
    (doc,) = [d for d in map(json.loads, as_json) if d["id"] == run_id]
    return line[at : at + 28], doc


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_verified_root_cause_is_marked_in_the_list(tmp_path: Path, kind: str) -> None:
    store = tmp_path / ("store" if kind == "sqlite" else "runs.jsonl")
    run_id = _loop(store, "toy_agent:make_executor")
    column, doc = _listed(store, run_id)
    assert column.rstrip() == "researcher@1 ✓"
    assert doc["root_agent"] == "researcher" and doc["root_step"] == 1
    assert doc["verified"] is True and doc["later_blame"] is None


def test_a_root_cause_the_rerun_did_not_confirm_is_marked(home: Path) -> None:
    run_id = _loop(home, "toy_agent:make_stubborn_executor", "--max-rounds", "2")
    column, doc = _listed(home, run_id)
    assert column.rstrip() == "researcher@1 ✗"
    assert doc["verified"] is False and doc["later_blame"] is None
    # a run never rerun has no mark
    dbg = AgentDebug(home)
    plain = failing_run(dbg)
    dbg.close()
    assert run_cli("diagnose", plain.id).returncode == 0
    column, doc = _listed(home, plain.id)
    assert column.rstrip() == "researcher@1"
    assert doc["verified"] is None and doc["later_blame"] is None


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_later_rounds_passing_blame_is_shown_after_the_mark(tmp_path: Path, kind: str) -> None:
    store = tmp_path / ("store" if kind == "sqlite" else "runs.jsonl")
    run_id = _loop(store, "toy_agent:make_second_time_executor", "--max-rounds", "3")
    column, doc = _listed(store, run_id)
    assert column == "researcher@1 ✗ →researcher@1"  # (28 characters exactly)
    later = doc["later_blame"]
    assert doc["verified"] is False and later is not None
    first = run_cli("--store", str(store), "list", "--branches-of", run_id, "--json")
    branches = {d["id"]: d for d in map(json.loads, first.stdout.splitlines())}
    assert later["round"] == 2 and later["agent"] == "researcher" and later["step"] == 1
    assert branches[later["branch_id"]]["status"] == "success"
    assert branches[later["branch_id"]]["parent_id"] == later["run_id"]
    assert branches[later["run_id"]]["parent_id"] == run_id


def _older_copy(src: Path, dst: Path) -> None:
    """``src`` as an agentdebug from before the report columns left it: the schema
    of version 1 as that made it (a WAL file), holding the same rows."""
    db = sqlite3.connect(dst)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(MIGRATIONS[1])
    db.execute("PRAGMA user_version=1")
    db.execute("ATTACH ? AS src", (str(src),))
    for table in ("runs", "events", "run_agents", "report_modes", "labels"):
        db.execute(f"INSERT INTO {table} SELECT * FROM src.{table}")
    db.execute(
        "INSERT INTO reports SELECT id, run_id, created_at, root_agent, root_step, data"
        " FROM src.reports"
    )
    db.commit()
    db.execute("DETACH src")
    db.close()


def test_a_store_from_before_the_report_columns_lists_and_fills_them_when_written(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _loop(home, "toy_agent:make_executor")
    old = tmp_path / "old" / "agentdebug.db"
    old.parent.mkdir()
    _older_copy(home / "agentdebug.db", old)
    assert not NEW_COLUMNS & columns_of(sqlite3.connect(old), "reports")

    # read-only here: read as it is, the marks empty
    monkeypatch.setattr("agentdebug.store.sqlite.not_writable", lambda path: "test")
    reader = SQLiteStore(old)
    (summary,) = [s for s in reader.list_runs() if s.id == run_id]
    assert (summary.root_agent, summary.root_step, summary.verified) == ("researcher", 1, None)
    reader.close()
    monkeypatch.undo()
    assert not NEW_COLUMNS & columns_of(sqlite3.connect(old), "reports")

    # opened where it can be written: the columns added, no new schema version (an
    # older agentdebug keeps using the file); empty until a report is stored again
    column, doc = _listed(old.parent, run_id)
    assert column.rstrip() == "researcher@1"
    assert doc["verified"] is None and doc["later_blame"] is None
    assert columns_of(sqlite3.connect(old), "reports") >= NEW_COLUMNS
    store = SQLiteStore(old)
    assert store.schema_version == SCHEMA_VERSION == 1
    latest = store.load_reports(run_id)[-1]
    assert latest.verified_by_rerun is True  # (the report itself knew)
    store.save_report(latest)  # stored again
    store.close()
    column, doc = _listed(old.parent, run_id)
    assert column.rstrip() == "researcher@1 ✓" and doc["verified"] is True


def test_the_report_columns_wait_for_a_busy_file_and_the_store_works_without(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process in a write transaction: the store opens at once without the
    columns, lists and stores reports (unmarked); the next open adds them."""
    from agentdebug.testing import finishes_within

    src = tmp_path / "src.db"
    SQLiteStore(src).close()
    _older_copy(src, tmp_path / "s.db")
    writer = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    with caplog.at_level(logging.WARNING, logger="agentdebug.store"):
        opened = finishes_within(10, lambda: SQLiteStore(tmp_path / "s.db"))
    assert "report columns not added now" in caplog.text
    writer.execute("ROLLBACK")
    writer.close()
    opened.save_trajectory(make_run("r1"))
    opened.save_report(_report("r1", "rep", _verified()))
    assert [(s.id, s.root_agent, s.verified) for s in opened.list_runs()] == [("r1", "a", None)]
    opened.close()
    again = SQLiteStore(tmp_path / "s.db")
    assert columns_of(again._db, "reports") >= NEW_COLUMNS
    again.save_report(_report("r1", "rep", _verified()))
    assert [s.verified for s in again.list_runs()] == [True]
    again.close()


def _verified() -> Verification:
    return Verification(status="verified_by_rerun", branch_id="b1", resume_step=3)


def _later(detail: str) -> Verification:
    return Verification(status="not_confirmed", branch_id="b1", resume_step=3, detail=detail)


def _report(run_id: str, rid: str, v: Verification | None, agent: str = "a") -> DiagnosticReport:
    root = Hypothesis(agent_name=agent, step_index=3, strategy="heuristic", confidence=0.5)
    return DiagnosticReport(
        id=rid,
        trajectory_id=run_id,
        hypotheses=[root],
        verification=v,
        verified_by_rerun=None if v is None else v.status == "verified_by_rerun",
    )


LONG = "a_searcher_with_a_very_long_name"
WORKED = (
    "outcome scorer: wrong city; round 3's branch b9, which corrected "
    f"{LONG}_writer at step 12 of run b5, succeeded"
)


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_long_names_are_cut_keeping_the_steps_and_marks(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ("s.db" if kind == "sqlite" else "s.jsonl")
    store = SQLiteStore(path) if kind == "sqlite" else JSONLStore(path)
    store.save_trajectory(make_run("r1"))
    store.save_report(_report("r1", "rep", _later(WORKED), agent=LONG))
    (summary,) = store.list_runs()
    assert summary.verified is False
    assert summary.later == LaterBlame(3, "b9", "b5", f"{LONG}_writer", 12)
    store.close()
    column, doc = _listed(path, "r1")
    assert column == "a_searche…@3 ✗ →a_search…@12"
    assert doc["later_blame"] == {
        "round": 3,
        "branch_id": "b9",
        "run_id": "b5",
        "agent": f"{LONG}_writer",
        "step": 12,
    }


def test_verdict_of_reads_the_loops_words() -> None:
    """The verification as the loop writes it (agentdebug.rerun.record)."""
    assert verdict_of({}) == (None, None)
    assert verdict_of({"verified_by_rerun": True}) == (True, None)  # (before verification)
    assert verdict_of({"verification": {"status": "verified_by_rerun"}}) == (True, None)
    plain = {"verification": {"status": "not_confirmed", "detail": "outcome scorer: no"}}
    assert verdict_of(plain) == (False, None)
    agentless = {
        "verification": {
            "status": "not_confirmed",
            "detail": "x; round 2's branch b-2, which corrected step 5 of run b-1, succeeded",
        }
    }
    assert verdict_of(agentless) == (False, LaterBlame(2, "b-2", "b-1", None, 5))


def test_verdict_of_prefers_the_structured_later_blame() -> None:
    """The loop now keeps the later blame as data (``verification.later``); the
    detail's sentence is read only for reports written before it was kept."""
    later = {"round": 3, "branch_id": "b-3", "run_id": "b-2", "agent": "writer", "step": 4}
    report = {
        "verification": {"status": "not_confirmed", "detail": "reworded entirely", "later": later}
    }
    assert verdict_of(report) == (False, LaterBlame(3, "b-3", "b-2", "writer", 4))
