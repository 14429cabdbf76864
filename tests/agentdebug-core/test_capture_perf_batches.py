"""Capture's batched writes: one JSON array per run and chunk, split by SQLite.

The writer serialises a chunk of a run's events in one go and SQLite splits the
array into rows; these tests hold that path to what the event-by-event path
writes, and check the cases that must leave it (a field to coerce, threads
interleaving sequence numbers, a store that cannot take the array, loading rows
in key order)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.capture.encode import batch_json, event_json, snapshot
from agentdebug.schema import Artifact, CheckpointRef
from agentdebug.store import open_store
from agentdebug.store.base import EventBatch, EventRow
from agentdebug.store.sqlite import SQLiteStore

S = object()


def item(seq: int, **fields: Any) -> tuple[Any, ...]:
    order = ["type", "agent", "step", "input", "output", "error", "module", "parent"]
    order += ["duration", "metadata", "extra", "event_id", "ts"]
    values = {"type": "message", "step": seq, "ts": 1700000000.25 + seq, **fields}
    return (S, seq, *(values.get(k) for k in order), f"e{seq}")


PLAIN = [
    item(0, agent="a", output="x"),
    item(1, input=snapshot({"q": [1, 2]}), output=snapshot(["é", None])),
    item(2, module="m", parent="e0", duration=1.5, metadata={"k": (1, 2), 3: "int key"}),
    item(3, error=ValueError("boom"), output=7),
    item(4, error={"message": "m", "type": "T"}, output={1, 2}),
    item(
        5,
        extra={
            "artifacts": [Artifact(name="s", uri="file:///s")],
            "checkpoint": CheckpointRef(framework="f", checkpoint_id="c"),
        },
    ),
    item(6, output=b"\xff", duration=0),
]


def test_the_batch_array_is_what_the_event_by_event_path_writes() -> None:
    ids = {4: "given"}
    array = batch_json(PLAIN, ids, 1 << 20)
    assert array is not None
    one_by_one = [orjson.loads(event_json(it, 1 << 20, ids.get(i))) for i, it in enumerate(PLAIN)]
    assert orjson.loads(array) == one_by_one


def test_an_event_record_encodes_itself_is_what_the_careful_path_writes(home: Path) -> None:
    """Events with payloads to freeze are encoded by ``record`` itself; the stored
    document must be the one the writer's careful path makes of the same event."""
    ref = CheckpointRef(framework="f", checkpoint_id="c")
    art = Artifact(name="s", uri="file:///s")
    with AgentDebug(home).trace(goal="encoded") as t:
        t.record(
            EventType.LLM_RESPONSE,
            agent_name="a",
            step_index=3,
            input=[{"role": "user", "content": "é"}],
            output={"role": "assistant", "tool_calls": [{"id": 1}]},
            module="m",
            parent_id="e0",
            duration_ms=1.5,
            metadata={"model": "x", "usage": (1, 2)},
            artifacts=[art],
            checkpoint=ref,
        )
        t.record(EventType.AGENT_END, output={"n": 1}, duration_ms=0)
    db = sqlite3.connect(Path(home) / "agentdebug.db")
    stored = [row[0] for row in db.execute("SELECT data FROM events ORDER BY key")]
    db.close()
    assert len(stored) == 2
    ts = [orjson.loads(doc)["timestamp"] for doc in stored]
    first = item(
        0,
        type="llm.response",
        agent="a",
        step=3,
        input=snapshot([{"role": "user", "content": "é"}]),
        output=snapshot({"role": "assistant", "tool_calls": [{"id": 1}]}),
        module="m",
        parent="e0",
        duration=1.5,
        metadata=snapshot({"model": "x", "usage": (1, 2)}),
        extra={"artifacts": [art], "checkpoint": ref},
        ts=ts[0],
    )
    second = item(1, type="agent.end", step=4, output=snapshot({"n": 1}), duration=0, ts=ts[1])
    assert stored == [event_json(first, 1 << 20), event_json(second, 1 << 20)]


def _loop() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    "odd",
    [
        item(9, agent=7),
        item(9, module=["m"]),
        item(9, duration=-1.0),
        item(9, duration=float("nan")),
        item(9, metadata="not a dict"),
        item(9, output=2**70),
        item(9, output=_loop()),
    ],
)
def test_a_field_to_coerce_sends_the_batch_down_the_careful_path(odd: tuple[Any, ...]) -> None:
    assert batch_json([*PLAIN, odd], {}, 1 << 20) is None
    assert orjson.loads(event_json(odd, 1 << 20))["id"] == "e9"  # which keeps the event


def test_text_utf8_cannot_hold_is_escaped_alike_in_a_batch_and_on_the_careful_path() -> None:
    odd = item(9, input="\ud800")  # a lone surrogate: orjson refuses it as it is
    batch = batch_json([*PLAIN, odd], {}, 1 << 20)
    assert batch is not None
    assert orjson.loads(batch)[-1] == orjson.loads(event_json(odd, 1 << 20))
    assert orjson.loads(batch)[-1]["input"] == "\\ud800"


def test_a_batch_that_could_hold_an_oversized_event_is_left_to_the_careful_path() -> None:
    assert batch_json(PLAIN, {}, 100) is None


def test_an_event_batch_reads_as_rows_for_stores_that_want_rows() -> None:
    docs = [event_json(it, 1 << 20) for it in PLAIN]
    batch = EventBatch(5, len(docs), b"[" + b",".join(docs) + b"]", {"a"})
    assert len(batch) == len(PLAIN)
    assert [r.seq for r in batch] == list(range(5, 5 + len(PLAIN)))
    assert batch[0].agent_name == "a"
    assert [orjson.loads(r.data) for r in batch] == [orjson.loads(d) for d in docs]


def test_the_store_falls_back_to_rows_when_sqlite_refuses_the_array(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    with AgentDebug(store).trace(goal="g") as t:
        t.record(EventType.MESSAGE, agent_name="a", output="kept")
    bad = EventBatch(1, 1, b"[{not json", {"b"})
    bad._rows = [EventRow(1, "b", b'{"id":"x","type":"message","step_index":1}')]
    store.append_events(t.id, bad)
    events = store.load_trajectory(t.id).events
    assert [e.id for e in events] == ["e0", "x"]
    assert [r.id for r in store.list_runs()] == [t.id]


def test_threads_interleaving_sequence_numbers_still_store_every_event(home: Path) -> None:
    dbg = AgentDebug(flush_interval=0.01)
    with dbg.trace(goal="threads") as t:

        def work(n: int) -> None:
            for i in range(2000):
                t.record(EventType.TOOL_CALL, agent_name=f"w{n}", input={"i": i}, event_id=None)
                if i % 500 == 0:
                    time.sleep(0.001)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    events = open_store(home).load_trajectory(t.id).events
    assert [e.id for e in events] == [f"e{i}" for i in range(8000)]
    for n in range(4):
        assert [e.input["i"] for e in events if e.agent_name == f"w{n}"] == list(range(2000))


def test_a_run_loads_in_key_order_whatever_order_the_rows_were_written(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    with AgentDebug(store).trace(goal="g") as t:
        for i in range(50):
            t.record(EventType.MESSAGE, output=f"m{i}")
    # Rewrite the rows in reverse order, so the table's pages are not in key order.
    db = sqlite3.connect(tmp_path / "s.db")
    rows = db.execute("SELECT key, data FROM events ORDER BY key DESC").fetchall()
    db.execute("DELETE FROM events")
    db.executemany("INSERT INTO events(key, data) VALUES (?,?)", rows)
    db.commit()
    db.close()
    events = SQLiteStore(tmp_path / "s.db").load_trajectory(t.id).events
    assert [e.output for e in events] == [f"m{i}" for i in range(50)]


def test_a_plan_that_would_concatenate_out_of_key_order_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug.store import sqlite as sqlite_store
    from agentdebug.store import sqlite_schema

    with AgentDebug(SQLiteStore(tmp_path / "s.db")).trace(goal="g") as t:
        for i in range(20):
            t.record(EventType.MESSAGE, output=f"m{i}")
    # a concatenation whose plan is not a range search of the key (here it sorts the
    # rows backwards): the store sees the plan when it opens and reads row by row
    backwards = (
        "SELECT CAST(group_concat(data, ',') AS BLOB) FROM"
        " (SELECT data FROM events WHERE key BETWEEN ? AND ? ORDER BY key DESC)"
    )
    monkeypatch.setattr(sqlite_schema, "CONCAT_EVENTS", backwards)  # (what the check reads)
    monkeypatch.setattr(sqlite_store, "CONCAT_EVENTS", backwards)  # (what a load runs)
    store = SQLiteStore(tmp_path / "s.db")
    assert not store._concat_ordered
    events = store.load_trajectory(t.id).events
    assert [e.output for e in events] == [f"m{i}" for i in range(20)]


def test_a_run_without_events_loads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    with AgentDebug(store).trace(goal="empty") as t:
        pass
    assert store.load_trajectory(t.id).events == []


def test_an_unhashable_agent_name_costs_no_other_event(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path / "store")
    with dbg.trace(goal="a") as a, dbg.trace(goal="x") as x:
        a.record(EventType.PLAN, agent_name="planner", output="A1")
        x.record(EventType.SPAN, agent_name={"not": "a name"}, output="X1")  # type: ignore[arg-type]
        x.record(EventType.SPAN, agent_name=["also", "not"], output="X2")  # type: ignore[arg-type]
        a.record(EventType.PLAN, agent_name="planner", output="A2")
    store = dbg.store
    assert store is not None
    own = [e for e in store.load_trajectory(a.id).events if "sub_run" not in e.metadata]
    assert [e.output for e in own] == ["A1", "A2"]  # (and x's end: x is a's sub-run)
    xs = store.load_trajectory(x.id)
    assert [e.output for e in xs.events] == ["X1", "X2"]
    assert xs.events[0].agent_name is not None  # coerced to text, noted in the event
    assert xs.outcome.status.value != "running"  # the run's end was written too


@pytest.mark.parametrize("found_by", ["probe", "failed insert"])
def test_a_sqlite_without_json_each_writes_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    import agentdebug.store.sqlite as sqlite_store

    if found_by == "probe":
        monkeypatch.setattr(sqlite_store, "_has_json_each", lambda db: False)
    else:  # the probe passes but the trigger's table function is missing when it runs
        schema = tuple(
            st.replace("json_each", "json_each_missing") for st in sqlite_store.BATCH_SCHEMA
        )
        monkeypatch.setattr(sqlite_store, "BATCH_SCHEMA", schema)
    dbg = AgentDebug(tmp_path / "store")
    with dbg.trace(goal="old sqlite") as t:
        for i in range(50):
            t.record(EventType.TOOL_RESULT, agent_name="tool", output=f"r{i}")
    assert t.store_failed is False
    store = dbg.store
    assert store is not None
    run = store.load_trajectory(t.id)
    assert [e.output for e in run.events] == [f"r{i}" for i in range(50)]
    from agentdebug.store import RunQuery

    assert [r.id for r in store.list_runs(RunQuery(agent="tool"))] == [t.id]  # agents noted
