"""A run imported again (the trace fixed and exported anew) is that run now: the
diagnosis of what it was goes with it, in both stores, so `list`, `show` and
`list --mode` no longer name a root cause at steps the run no longer has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentdebug.store import RunQuery, open_store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "failed_booking.json"


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", ["runs.db", "runs.jsonl"])
def test_a_run_imported_again_loses_the_diagnosis_of_what_it_was(tmp_path: Path, name: str) -> None:
    store, file = tmp_path / name, tmp_path / "run.json"
    file.write_text(EXAMPLE.read_text())
    assert _cli(store, "diagnose", str(file)).returncode == 0
    (before,) = open_store(store).list_runs(RunQuery())
    assert (before.root_agent, before.root_step) == ("searcher", 3)
    run = json.loads(EXAMPLE.read_text())
    run["events"] = [e for e in run["events"] if e["step_index"] <= 2]
    run["outcome"] = {"status": "success", "final_answer": "ok"}
    file.write_text(json.dumps(run))
    assert _cli(store, "ingest", str(file)).returncode == 0
    reopened = open_store(store)
    (after,) = reopened.list_runs(RunQuery())
    assert (after.status, after.root_agent, after.root_step) == ("success", None, None)
    assert reopened.load_reports(after.id) == []
    listed = _cli(store, "list", "--mode", "action.malformed_tool_call")
    assert after.id not in listed.stdout
    assert "At step 3" not in _cli(store, "show", after.id).stdout
