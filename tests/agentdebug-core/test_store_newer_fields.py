"""A run a newer agentdebug wrote into a shared store, its header and events
carrying fields this agentdebug does not know: read without them, said once,
rather than refused whole ("run 'x' is stored damaged: field 'priority': Extra
inputs are not permitted"). What is recorded or imported is still checked."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import orjson
import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.errors import StoreError
from agentdebug.schema import AgentTrajectory
from agentdebug.store import open_store
from conftest import run_cli
from pydantic import ValidationError

KINDS = ["store", "runs.jsonl"]


def recorded(where: Path) -> str:
    dbg = AgentDebug(where)
    with dbg.trace(goal="book a flight", run_id="newer", agents=["planner"]) as t:
        t.record(EventType.PLAN, agent_name="planner", output="search fares")
        t.record(EventType.TOOL_RESULT, agent_name="planner", error="timeout")
    dbg.close()
    return "newer"


def _newer(doc: dict[str, object], **fields: object) -> bytes:
    return orjson.dumps({**doc, **fields})


def as_a_newer_agentdebug_wrote_it(where: Path, *, damaged_step: bool = False) -> None:
    """Add to the stored run what a newer agentdebug might: a header field, an
    event field, a field of the outcome's error (``damaged_step``: and a step that
    is no step, which is damage, not news)."""
    if where.suffix == ".jsonl":
        lines = []
        for line in where.read_bytes().splitlines():
            rec = orjson.loads(line)
            if rec["kind"] == "run":
                line = _newer(rec, header={**rec["header"], "priority": 2})
            elif rec["kind"] == "events":
                first = {**rec["events"][0], "confidence": 0.9}
                if damaged_step:
                    first["step_index"] = "first"
                line = _newer(rec, events=[first, *rec["events"][1:]])
            elif rec["kind"] == "finish":
                error = {"message": "timeout", "code": "E42"}
                line = _newer(rec, outcome={**rec["outcome"], "error": error})
            lines.append(line)
        where.write_bytes(b"\n".join(lines) + b"\n")
        return
    db = sqlite3.connect(where / "agentdebug.db")
    (header,) = db.execute("SELECT header FROM runs WHERE id='newer'").fetchone()
    head = orjson.loads(header)
    head["priority"] = 2
    head["outcome"]["error"] = {"message": "timeout", "code": "E42"}
    db.execute("UPDATE runs SET header=? WHERE id='newer'", (orjson.dumps(head),))
    key, data = db.execute("SELECT key, data FROM events ORDER BY key LIMIT 1").fetchone()
    event = {**orjson.loads(data), "confidence": 0.9}
    if damaged_step:
        event["step_index"] = "first"
    db.execute("UPDATE events SET data=? WHERE key=?", (orjson.dumps(event), key))
    db.commit()
    db.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_with_fields_from_a_newer_agentdebug_is_read_without_them(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    where = tmp_path / kind
    run_id = recorded(where)
    as_a_newer_agentdebug_wrote_it(where)

    shown = run_cli("--store", str(where), "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "search fares" in shown.stdout and "book a flight" in shown.stdout
    assert shown.stderr.count("does not know") == 1, shown.stderr
    assert (
        f"run {run_id} in {where if kind.endswith('.jsonl') else where / 'agentdebug.db'} "
        "holds fields this agentdebug does not know: event.confidence, "
        "outcome.error.code, priority (written by a newer agentdebug?)"
    ) in shown.stderr
    assert "stored damaged" not in shown.stderr

    store = open_store(where)
    with caplog.at_level(logging.WARNING, logger="agentdebug.store"):
        first = store.load_trajectory(run_id)
        again = store.load_trajectory(run_id)  # (said once per run and process)
    assert first == again
    assert [e.output for e in first.events][:1] == ["search fares"]
    assert first.outcome.error is not None and first.outcome.error.message == "timeout"
    assert len([r for r in caplog.records if "does not know" in r.getMessage()]) == 1
    store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_run_is_still_refused_naming_the_damage(tmp_path: Path, kind: str) -> None:
    where = tmp_path / kind
    run_id = recorded(where)
    as_a_newer_agentdebug_wrote_it(where, damaged_step=True)
    store = open_store(where)
    with pytest.raises(StoreError, match=r"stored damaged: field '0.step_index'"):
        store.load_trajectory(run_id)
    store.close()


def test_recording_and_importing_still_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="priority"):
        AgentTrajectory.model_validate({"id": "r", "priority": 2})
