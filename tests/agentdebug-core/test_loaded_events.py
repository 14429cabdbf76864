"""Events read back from a store behave as the events that were stored.

A loaded event keeps only its stored (non-default) fields in its ``__dict__`` and
reads the rest from the class; these tests hold it to the same behaviour as an
event built by its constructor, and the stored-document validator to the same
rules as the dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from agentdebug import AgentDebug
from agentdebug.errors import StoreError
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    Artifact,
    CheckpointRef,
    ErrorInfo,
    EventType,
)
from agentdebug.schema.trace import events_from_json, events_from_python
from agentdebug.store import JSONLStore, SQLiteStore
from agentdebug.store.base import event_row
from agentdebug.store.sqlite import LOAD_CHUNK
from pydantic import ValidationError

FULL = AgentEvent(
    id="e7",
    type=EventType.TOOL_RESULT,
    step_index=3,
    agent_name="booker",
    module="checkout",
    parent_id="e6",
    timestamp=datetime(2026, 11, 30, 12, 0, 1, 250000, tzinfo=UTC),
    duration_ms=12.5,
    input={"q": [1, 2]},
    output="timeout",
    error=ErrorInfo(message="Checkout timeout", type="TimeoutError"),
    metadata={"attempt": 2},
    artifacts=(Artifact(name="shot", uri="file:///tmp/s.png"),),
    checkpoint=CheckpointRef(framework="langgraph", checkpoint_id="c1", thread_id="t"),
)
SPARSE = AgentEvent(id="e0", type=EventType.PLAN, step_index=0, output="search fares")


def stored(*events: AgentEvent) -> list[AgentEvent]:
    """The events as a store writes them (without defaults) and reads them back."""
    return events_from_json(b"[" + b",".join(event_row(0, e).data for e in events) + b"]")


def test_a_loaded_event_equals_the_event_that_was_stored() -> None:
    full, sparse = stored(FULL, SPARSE)
    assert full == FULL
    assert sparse == SPARSE
    assert repr(sparse) == repr(SPARSE)
    assert sparse.model_dump() == SPARSE.model_dump()
    assert sparse.model_dump_json() == SPARSE.model_dump_json()
    assert full.model_dump(mode="json") == FULL.model_dump(mode="json")
    assert dataclasses.asdict(sparse) == dataclasses.asdict(SPARSE)
    # a constructed event keeps only its non-default fields too: both look alike
    # to vars() and to orjson (which writes a dataclass from its __dict__)
    assert vars(sparse) == vars(SPARSE) and vars(full) == vars(FULL)
    assert orjson.dumps(sparse) == orjson.dumps(SPARSE)


def test_absent_fields_read_their_defaults() -> None:
    (sparse,) = stored(SPARSE)
    assert set(vars(sparse)) == {"id", "type", "step_index", "output"}  # only what was stored
    assert sparse.agent_name is None and sparse.duration_ms is None and sparse.error is None
    assert sparse.artifacts == () and sparse.checkpoint is None
    assert sparse.metadata == {} and isinstance(sparse.metadata, dict)
    assert orjson.dumps(sparse.metadata) == b"{}"


def test_a_loaded_event_is_as_frozen_as_any_other() -> None:
    (sparse,) = stored(SPARSE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sparse.output = "changed"  # type: ignore[misc]
    # the shared empty metadata of loaded events refuses changes rather than
    # changing every loaded event at once
    with pytest.raises(TypeError, match="cannot be changed"):
        sparse.metadata["k"] = "v"
    with pytest.raises(TypeError):
        sparse.metadata.update(k="v")
    assert stored(SPARSE)[0].metadata == {}
    mine = dict(sparse.metadata)  # a copy is the reader's own
    mine["k"] = "v"
    for made in (
        sparse.metadata.copy(),
        copy.copy(sparse.metadata),
        copy.deepcopy(sparse.metadata),
        dataclasses.asdict(sparse)["metadata"],
    ):
        assert made == {} and made.__class__ is dict  # the reader's own


def test_copies_replace_and_pickle_keep_the_event() -> None:
    (sparse,) = stored(SPARSE)
    changed = dataclasses.replace(sparse, output="other")
    assert changed.output == "other" and changed.step_index == 0
    assert sparse.model_copy(update={"agent_name": "x"}).agent_name == "x"
    assert pickle.loads(pickle.dumps(sparse)) == SPARSE
    assert copy.deepcopy(sparse) == SPARSE
    with pytest.raises(ValidationError):  # a copy is validated like a new event
        dataclasses.replace(sparse, step_index=-1)


def test_a_trajectory_of_loaded_events_validates_and_dumps_as_before() -> None:
    events = stored(SPARSE, FULL)
    traj = AgentTrajectory(id="r", events=events)
    assert traj.events == [SPARSE, FULL]
    assert traj.model_dump() == AgentTrajectory(id="r", events=[SPARSE, FULL]).model_dump()
    again = AgentTrajectory.model_validate_json(traj.model_dump_json())
    assert again.events == [SPARSE, FULL]


BAD_DOCS: list[dict[str, Any]] = [
    {"type": "plan", "step_index": 0},  # no id
    {"id": "e", "step_index": 0},  # no type
    {"id": "e", "type": "plan"},  # no step
    {"id": "e", "type": "nope", "step_index": 0},
    {"id": "e", "type": "plan", "step_index": -1},
    {"id": "e", "type": "plan", "step_index": "abc"},
    {"id": "e", "type": "plan", "step_index": 0, "duration_ms": -2},
    {"id": "e", "type": "plan", "step_index": 0, "surprise": 1},
    {"id": "e", "type": "plan", "step_index": 0, "error": {"msg": "wrong key"}},
    {"id": "e", "type": "plan", "step_index": 0, "error": "a bare string"},
    {"id": "e", "type": "plan", "step_index": 0, "metadata": [1, 2]},
    {"id": "e", "type": "plan", "step_index": 0, "artifacts": [{"name": "x"}]},
    {"id": "e", "type": "plan", "step_index": 0, "checkpoint": {"framework": "x"}},
    {"id": "e", "type": "plan", "step_index": 0, "timestamp": "yesterday"},
    {"id": 5, "type": "plan", "step_index": 0},
]
GOOD_DOCS: list[dict[str, Any]] = [
    {"id": "e", "type": "plan", "step_index": 0},
    {"id": "e", "type": "plan", "step_index": "7", "duration_ms": 3, "timestamp": 1796105086.5},
    {"id": "e", "type": "plan", "step_index": 0, "timestamp": "2026-11-30T12:00:00Z"},
    {"id": "e", "type": "plan", "step_index": 0, "agent_name": None, "metadata": {}},
    {"id": "e", "type": "error", "step_index": 1, "error": {"message": "boom", "type": "X"}},
    {"id": "e", "type": "plan", "step_index": 0, "artifacts": [{"name": "a", "uri": "u"}]},
]


@pytest.mark.parametrize("doc", BAD_DOCS)
def test_a_stored_document_is_refused_exactly_when_the_dataclass_refuses_it(
    doc: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError) as theirs:
        AgentEvent.model_validate(doc)
    with pytest.raises(ValidationError) as ours:
        events_from_json(orjson.dumps([doc]))
    with pytest.raises(ValidationError):
        events_from_python([doc])
    # the same field is named (under the event's position in the run)
    assert ours.value.errors()[0]["loc"][1:] == theirs.value.errors()[0]["loc"]


@pytest.mark.parametrize("doc", GOOD_DOCS)
def test_a_stored_document_becomes_the_event_the_dataclass_makes(doc: dict[str, Any]) -> None:
    expected = AgentEvent.model_validate(doc)
    assert events_from_json(orjson.dumps([doc])) == [expected]
    assert events_from_python([doc]) == [expected]


def test_events_given_as_objects_pass_through() -> None:
    assert events_from_python([SPARSE, {"id": "e", "type": "plan", "step_index": 1}])[0] is SPARSE


def record_run(home: Path, n: int) -> tuple[SQLiteStore, str]:
    dbg = AgentDebug(home)
    with dbg.trace(goal="many") as t:
        for i in range(n):
            t.record(EventType.MESSAGE, agent_name=f"a{i % 3}", output=f"m{i}")
    assert dbg.store is not None
    return dbg.store, t.id  # type: ignore[return-value]


def test_a_run_longer_than_a_load_chunk_loads_whole_and_in_order(tmp_path: Path) -> None:
    n = LOAD_CHUNK * 2 + 17
    store, run_id = record_run(tmp_path / "s", n)
    events = SQLiteStore(store.path).load_trajectory(run_id).events
    assert [e.output for e in events] == [f"m{i}" for i in range(n)]


def test_a_damaged_event_past_the_first_chunk_is_named_by_its_place_in_the_run(
    tmp_path: Path,
) -> None:
    n = LOAD_CHUNK + 100
    store, run_id = record_run(tmp_path / "s", n)
    db = sqlite3.connect(store.path)
    (base,) = db.execute("SELECT min(key) FROM events").fetchone()
    db.execute(
        """UPDATE events SET data = '{"id":"x","type":"plan","step_index":-3}' WHERE key = ?""",
        (base + LOAD_CHUNK + 5,),
    )
    db.commit()
    db.close()
    with pytest.raises(StoreError) as err:
        SQLiteStore(store.path).load_trajectory(run_id)
    assert f"field '{LOAD_CHUNK + 5}.step_index'" in str(err.value)


def test_a_chunk_too_long_for_one_sqlite_value_is_read_row_by_row(tmp_path: Path) -> None:
    store, run_id = record_run(tmp_path / "s", 300)
    reopened = SQLiteStore(store.path)
    reopened._db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2000)  # a few events' worth
    events = reopened.load_trajectory(run_id).events
    assert [e.output for e in events] == [f"m{i}" for i in range(300)]


def test_jsonl_loads_the_same_events(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path / "runs.jsonl")
    store.save_trajectory(AgentTrajectory(id="r", events=[SPARSE, FULL]))
    assert JSONLStore(tmp_path / "runs.jsonl").load_trajectory("r").events == [SPARSE, FULL]


def test_a_row_that_is_not_json_past_the_first_chunk_says_where_its_part_starts(
    tmp_path: Path,
) -> None:
    store, run_id = record_run(tmp_path / "s", LOAD_CHUNK + 100)
    db = sqlite3.connect(store.path)
    (base,) = db.execute("SELECT min(key) FROM events").fetchone()
    db.execute("UPDATE events SET data = '{\"id\": ' WHERE key = ?", (base + LOAD_CHUNK + 5,))
    db.commit()
    db.close()
    with pytest.raises(StoreError) as err:
        SQLiteStore(store.path).load_trajectory(run_id)
    message = str(err.value)
    assert "\n" not in message
    assert f"the events from position {LOAD_CHUNK} on" in message
