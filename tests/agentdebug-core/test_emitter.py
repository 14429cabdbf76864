"""``TraceSession.emitter``: the hot path framework integrations record through.

It trusts its caller's types and checks nothing, so these tests hold it to what a
user reading the stored run would notice: the events come back as ``record``
would have stored them, in order, and whatever it cannot encode still arrives
(through ``record``), without ever raising into the agent.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.capture.encode import to_json
from agentdebug.schema import AgentEvent, CheckpointRef
from agentdebug.store import open_store


def doc(**fields: Any) -> dict[str, Any]:
    return {"id": None, "type": EventType.AGENT_START, "timestamp": None, **fields}


def test_emitted_events_load_as_the_events_record_stores(home: Path) -> None:
    ref = CheckpointRef(framework="f", checkpoint_id="c1")
    dbg = AgentDebug(home)
    with dbg.trace(goal="both ways") as t:
        emit = t.emitter()
        fields: dict[str, Any] = {
            "step_index": 4,
            "agent_name": "node",
            "module": "graph.node",
            "parent_id": "e0",
            "duration_ms": 2.5,
            "input": {"q": [1, 2]},
            "output": ("a", None),
            "metadata": {"triggers": ("start",)},
            "checkpoint": ref,
        }
        emitted = emit(doc(**fields), "node")
        recorded = t.record(EventType.AGENT_START, **fields)
        assert emit(doc(step_index=5, agent_name="node"), "node") == "e2"
    events = open_store(home).load_trajectory(t.id).events
    assert [e.id for e in events] == [emitted, recorded, "e2"] == ["e0", "e1", "e2"]
    first, second = events[0], events[1]

    def same(e: AgentEvent) -> dict[str, Any]:
        return {k: v for k, v in e.model_dump().items() if k not in ("id", "timestamp")}

    assert same(first) == same(second)
    assert first.timestamp is not None and first.timestamp <= second.timestamp  # type: ignore[operator]
    assert events[2].parent_id is None and events[2].metadata == {}


def test_an_integration_default_makes_its_own_objects_small(home: Path) -> None:
    class Message:
        def __init__(self, text: str) -> None:
            self.text = text

    def small(value: Any) -> Any:
        return {"said": value.text} if isinstance(value, Message) else to_json(value)

    dbg = AgentDebug(home)
    alike = {1: Message("int"), "1": Message("text")}  # (one JSON key: both are kept)
    with dbg.trace(goal="custom") as t:
        t.emitter(small)(doc(step_index=0, agent_name="a", output=[Message("hi")]), "a")
        t.emitter(small)(doc(step_index=1, agent_name="a", output=alike), "a")
    first, second = open_store(home).load_trajectory(t.id).events
    assert first.output == [{"said": "hi"}]
    assert second.output == {"1 (int)": {"said": "int"}, "1": {"said": "text"}}


def test_what_orjson_refuses_is_recorded_by_the_careful_path(home: Path) -> None:
    odd = {1: "int key", "nested": {2: "also"}}
    huge = {"n": 2**70}  # beyond JSON's integers for orjson
    dbg = AgentDebug(home)
    with dbg.trace(goal="odd payloads") as t:
        emit = t.emitter()
        emit(doc(step_index=0, agent_name="a", output=odd), "a")
        emit(doc(step_index=1, agent_name="a", output=huge), "a")
        emit(doc(step_index=2, agent_name="a", output="after"), "a")
        t.record(EventType.AGENT_START, step_index=3, agent_name="a", output=huge)
    events = open_store(home).load_trajectory(t.id).events
    assert [e.step_index for e in events] == [0, 1, 2, 3]
    assert events[0].output == {"1": "int key", "nested": {"2": "also"}}  # keys made text
    assert events[1].output == events[3].output  # as record keeps it
    assert "1180591620717411303424" in str(events[1].output)  # the number is not lost
    assert events[2].output == "after"


def test_an_event_over_the_size_limit_is_cut_as_record_cuts_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", "4096")
    dbg = AgentDebug(home)
    with dbg.trace(goal="big") as t:
        t.emitter()(doc(step_index=0, agent_name="a", output="x" * 100_000), "a")
    (event,) = open_store(home).load_trajectory(t.id).events
    assert len(event.model_dump_json()) < 20_000
    assert event.metadata  # the event says it was cut


def test_a_final_answer_goes_through_record_and_sets_the_outcome(home: Path) -> None:
    dbg = AgentDebug(home)
    with dbg.trace(goal="answer") as t:
        t.emitter()(
            {"id": None, "type": EventType.FINAL_ANSWER, "step_index": 0, "output": "42"}, "a"
        )
    run = open_store(home).load_trajectory(t.id)
    assert run.events[0].output == "42"
    assert run.outcome.final_answer == "42"


def test_a_broken_document_is_logged_and_never_raised(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = AgentDebug(home)
    with dbg.trace(goal="broken") as t:
        emit = t.emitter()
        with caplog.at_level(logging.ERROR, logger="agentdebug.capture"):
            assert emit({"id": None, "type": EventType.PLAN}, "a") is None  # no step
        emit(doc(step_index=0, agent_name="a"), "a")
    assert "could not be recorded" in caplog.text
    assert len(open_store(home).load_trajectory(t.id).events) == 1


def test_runs_emitting_in_turn_through_many_drains_keep_their_own_events(home: Path) -> None:
    """The writer takes a chunk of one run's encoded events at once; interleaved
    runs, run starts and ends, and anchors between them must not mix them up."""
    dbg = AgentDebug(home, flush_interval=0.005)
    runs = [dbg.trace(goal=f"run {n}") for n in range(3)]
    emits = [r.emitter() for r in runs]
    for i in range(6000):
        n = 0 if i < 3000 else (i % 3)  # a long stretch of one run, then all three in turn
        emits[n](doc(step_index=i, agent_name=f"a{n}", output=i), f"a{n}")
        if i % 1500 == 0:
            time.sleep(0.02)
            extra = dbg.trace(goal="a run in between")  # a run's start and end meanwhile
            extra.close()
    for run in runs:
        run.close()
    store = open_store(home)
    got = [[e.output for e in store.load_trajectory(r.id).events] for r in runs]
    want = [[i for i in range(6000) if (0 if i < 3000 else i % 3) == n] for n in range(3)]
    assert got == want
