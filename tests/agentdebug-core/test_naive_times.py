"""A run whose file gives its times with no zone (``2026-12-01T10:00:00``, as
many exports do) is read as UTC by both stores, by ``list --since`` and by
``prune --older-than``, whatever the machine's own zone; a JSON Lines store used
to crash ``list --since`` on it (a naive time against an aware one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from agentdebug.schema import AgentTrajectory
from agentdebug.store import RunQuery, open_store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "failed_booking.json"


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TZ": "America/New_York"}  # (the local zone is not UTC)
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture(params=["runs.db", "runs.jsonl"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    run = json.loads(EXAMPLE.read_text())
    run.update(id="naive-run", started_at="2026-12-01T10:00:00", ended_at="2026-12-01T10:05:00")
    file = tmp_path / "naive.json"
    file.write_text(json.dumps(run))
    path = tmp_path / request.param
    done = _cli(path, "ingest", str(file))
    assert done.returncode == 0, done.stderr
    return path


def test_a_time_with_no_zone_is_utc_in_the_model() -> None:
    run = AgentTrajectory(id="r", started_at=datetime(2026, 12, 1, 10), ended_at=None)
    assert run.started_at == datetime(2026, 12, 1, 10, tzinfo=UTC)


def test_list_since_reads_it_as_utc_in_either_store(store: Path) -> None:
    before = _cli(store, "list", "--since", "2026-12-01T09:59Z", "--json")
    after = _cli(store, "list", "--since", "2026-12-01T10:01Z", "--json")
    assert before.returncode == 0 and after.returncode == 0, (before.stderr, after.stderr)
    assert "Traceback" not in before.stderr + after.stderr
    listed = [json.loads(line) for line in before.stdout.splitlines() if line.strip()]
    assert [r["id"] for r in listed] == ["naive-run"]
    assert listed[0]["started_at"] == "2026-12-01T10:00:00+00:00"
    assert "naive-run" not in after.stdout


def test_both_stores_give_the_same_aware_times(store: Path) -> None:
    (summary,) = open_store(store).list_runs(RunQuery())
    assert summary.started_at == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert summary.ended_at == datetime(2026, 12, 1, 10, 5, tzinfo=UTC)


def test_prune_older_than_a_date_reads_the_run_as_utc(store: Path) -> None:
    kept = _cli(store, "prune", "--older-than", "2026-12-01T10:04Z", "--dry-run")
    gone = _cli(store, "prune", "--older-than", "2026-12-01T10:06Z", "--dry-run")
    assert kept.returncode == 0 and gone.returncode == 0, (kept.stderr, gone.stderr)
    assert "naive-run" not in kept.stdout
    assert "naive-run" in gone.stdout and "would prune 1 run" in gone.stdout


@pytest.mark.parametrize("name", ["runs.db", "runs.jsonl"])
def test_a_time_with_an_offset_is_listed_in_utc_by_either_store(tmp_path: Path, name: str) -> None:
    """A run started at 09:34 at -08:00 is listed at 17:34 by both stores (the JSON
    Lines store showed 09:34 and SQLite 17:34, neither saying which zone)."""
    run = json.loads(EXAMPLE.read_text())
    run.update(id="zoned", started_at="2026-10-16T09:34:00-08:00")
    file = tmp_path / "zoned.json"
    file.write_text(json.dumps(run))
    store = tmp_path / name
    assert _cli(store, "ingest", str(file)).returncode == 0
    listed = _cli(store, "list", "--json")
    assert json.loads(listed.stdout)["started_at"] == "2026-10-16T17:34:00+00:00"
    assert "2026-10-16 17:34" in _cli(store, "list").stdout
