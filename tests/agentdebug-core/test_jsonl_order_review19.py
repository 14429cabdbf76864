"""Both stores list runs in one order, and ``prune --keep-last N`` keeps the same runs
in both: by start, newest first; among runs with the same start, or none (imported
message lists, Who&When), the run added last first; runs with no start after every
run with one (SQLite's ``ORDER BY started_at DESC, num DESC``, where NULL sorts
lowest).

A JSON Lines store listed runs with no start in the order it was given them, oldest
first, and so a prune with ``--keep-last`` kept the oldest of them and deleted the
runs imported last."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from agentdebug.store import JSONLStore, RunQuery, SQLiteStore, TraceStore, open_store
from agentdebug.store.retention import Retention, select

NOW = datetime.now(UTC)
DAY = timedelta(days=1)
KINDS = ("sqlite", "jsonl")

# (id, start) in the order they are added: dated and undated runs mixed, two runs
# with the same start, and one started before 1970 (a negative timestamp, still
# above the runs with no start)
ADDED: list[tuple[str, datetime | None]] = [
    ("u1", None),
    ("d-old", NOW - 3 * DAY),
    ("u2", None),
    ("tie-a", NOW - DAY),
    ("d-1960", datetime(1960, 5, 1, tzinfo=UTC)),
    ("tie-b", NOW - DAY),
    ("u3", None),
    ("d-new", NOW - timedelta(hours=1)),
    ("u4", None),
]
NEWEST_FIRST = ["d-new", "tie-b", "tie-a", "d-old", "d-1960", "u4", "u3", "u2", "u1"]


def put(store: TraceStore, run_id: str, started: datetime | None) -> None:
    store.save_trajectory(
        AgentTrajectory(
            id=run_id,
            goal=f"goal of {run_id}",
            started_at=started,
            ended_at=started + timedelta(minutes=1) if started else None,
            outcome=Outcome(status=OutcomeStatus.SUCCESS),
            events=[
                AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input=run_id),
                AgentEvent(id="e1", type=EventType.LLM_RESPONSE, step_index=1, output="ok"),
            ],
        )
    )


def where(folder: Path, kind: str) -> Path:
    return folder / ("runs.jsonl" if kind == "jsonl" else "runs.db")


def made(folder: Path, kind: str, runs: list[tuple[str, datetime | None]] = ADDED) -> Path:
    path = where(folder, kind)
    store = open_store(path)
    for run_id, started in runs:
        put(store, run_id, started)
    store.close()
    return path


def listed(path: Path, query: RunQuery | None = None) -> list[str]:
    store = open_store(path)
    try:
        return [run.id for run in store.list_runs(query or RunQuery(limit=None))]
    finally:
        store.close()


@pytest.fixture
def both(tmp_path: Path) -> Iterator[dict[str, Path]]:
    yield {kind: made(tmp_path, kind) for kind in KINDS}


def test_both_stores_list_runs_newest_first_undated_last(both: dict[str, Path]) -> None:
    assert listed(both["sqlite"]) == NEWEST_FIRST
    assert listed(both["jsonl"]) == NEWEST_FIRST


@pytest.mark.parametrize("limit", [1, 3, 5, 6, 8])
def test_a_limit_takes_the_same_newest_runs(both: dict[str, Path], limit: int) -> None:
    for path in both.values():
        assert listed(path, RunQuery(limit=limit)) == NEWEST_FIRST[:limit]


def test_runs_asked_for_by_id_come_in_the_same_order(both: dict[str, Path]) -> None:
    asked = ("u1", "d-1960", "u3", "tie-a", "tie-b", "u4")
    for path in both.values():
        assert listed(path, RunQuery(ids=asked, limit=None)) == [
            rid for rid in NEWEST_FIRST if rid in asked
        ]


def test_a_run_saved_again_keeps_its_place(tmp_path: Path) -> None:
    """Saved again (begun again), a run keeps its place among runs with the same
    start, as it keeps its row number in SQLite."""
    orders = {}
    for kind in KINDS:
        path = made(tmp_path, kind, [("a", None), ("b", None), ("c", None)])
        store = open_store(path)
        put(store, "a", None)
        store.close()
        orders[kind] = listed(path)
    assert orders == {"sqlite": ["c", "b", "a"], "jsonl": ["c", "b", "a"]}


@pytest.mark.parametrize("keep", range(len(NEWEST_FIRST) + 1))
def test_the_choice_of_keep_last_is_the_same_in_both(both: dict[str, Path], keep: int) -> None:
    for path in both.values():
        store = open_store(path)
        try:
            plan = select(store.list_runs(RunQuery(limit=None)), Retention(keep_last=keep), NOW)
        finally:
            store.close()
        assert plan.run_ids == NEWEST_FIRST[keep:], path


def agentdebug(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", "--store", str(store), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("keep", [2, 6])
def test_prune_keep_last_keeps_the_newest_in_both(both: dict[str, Path], keep: int) -> None:
    """``prune --keep-last N --yes``: the N newest stay, undated ones the last added;
    the runs imported last are never the ones deleted."""
    for path in both.values():
        done = agentdebug("prune", "--keep-last", str(keep), "--yes", store=path)
        assert done.returncode == 0, done.stderr
        assert listed(path) == NEWEST_FIRST[:keep], path


def test_runs_added_after_a_prune_are_the_newest(both: dict[str, Path]) -> None:
    """A JSON Lines prune writes the file anew: the runs it keeps keep their order,
    and a run added after it comes before them, as in SQLite."""
    for path in both.values():
        store = open_store(path)
        try:
            plan = select(store.list_runs(RunQuery(limit=None)), Retention(keep_last=7), NOW)
            assert isinstance(store, JSONLStore | SQLiteStore)
            store.delete_runs(plan.run_ids)
            put(store, "u5", None)
            put(store, "tie-c", NOW - DAY)
        finally:
            store.close()
        assert listed(path) == [
            "d-new",
            "tie-c",
            "tie-b",
            "tie-a",
            "d-old",
            "d-1960",
            "u5",
            "u4",
            "u3",
        ], path


def test_what_a_prune_deletes_is_listed_in_the_stores_order(tmp_path: Path) -> None:
    """The runs a prune deletes (as ``--dry-run`` lists them) come newest first in
    the store's order, not gathered by family: a rerun of the oldest run is not
    listed before a run added between them."""
    for kind in KINDS:
        path = made(tmp_path, kind, [("a", None), ("b", None)])
        store = open_store(path)
        try:
            store.save_trajectory(AgentTrajectory(id="c", goal="rerun of a", parent_id="a"))
            runs = store.list_runs(RunQuery(limit=None))
            assert [run.id for run in runs] == ["c", "b", "a"], kind
            assert select(runs, Retention(keep_last=0), NOW).run_ids == ["c", "b", "a"], kind
        finally:
            store.close()
