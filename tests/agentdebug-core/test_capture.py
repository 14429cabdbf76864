"""Capture: the documented snippet, threads, asyncio, broken stores, kills, big events."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus, current_session, record
from agentdebug.errors import StoreError
from agentdebug.schema import AgentTrajectory
from agentdebug.store import open_store
from agentdebug.testing import finishes_within


def test_the_readme_snippet_works_as_written(home: Path) -> None:
    from agentdebug import AgentDebug, EventType

    dbg = AgentDebug()
    with dbg.trace(goal="Book flight", framework="my-agent") as t:
        t.record(EventType.PLAN, agent_name="planner", output="Search fares")
        t.record(
            EventType.TOOL_RESULT, agent_name="browser", step_index=3, error="Checkout timeout"
        )
        report = t.analyze()

    assert report.root_cause is not None
    assert report.root_cause.agent_name == "browser"
    assert report.root_cause.step_index == 3
    assert report.failure_modes == ["system.timeout"]
    assert report.tier == "free"
    # The run and its report are in the store under AGENTDEBUG_HOME, side by side.
    store = open_store(home)
    stored = store.load_trajectory(t.id)
    assert [e.type for e in stored.events] == [EventType.PLAN, EventType.TOOL_RESULT]
    assert [e.step_index for e in stored.events] == [0, 3]
    assert stored.outcome.status is OutcomeStatus.FAILURE
    assert [r.id for r in store.load_reports(t.id)] == [report.id]
    assert "findings" not in stored.model_dump()


def test_steps_are_numbered_in_order_when_not_given(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.USER_INPUT, output="hi")
        t.record(EventType.LLM_CALL, step_index=5)
        t.record(EventType.LLM_RESPONSE, output="hello")
    events = open_store(home).load_trajectory(t.id).events
    assert [e.step_index for e in events] == [0, 5, 6]
    assert [e.id for e in events] == ["e0", "e1", "e2"]


def test_an_exception_in_the_run_is_recorded_and_still_raised(home: Path) -> None:
    dbg = AgentDebug()
    with pytest.raises(RuntimeError, match="boom"), dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_CALL, agent_name="a", input={"q": 1})
        raise RuntimeError("boom")
    stored = open_store(home).load_trajectory(t.id)
    assert stored.events[-1].type is EventType.ERROR
    assert stored.events[-1].error is not None
    assert stored.events[-1].error.type == "RuntimeError"
    assert "Traceback" in (stored.events[-1].error.traceback or "")
    assert stored.outcome.status is OutcomeStatus.FAILURE
    assert current_session() is None


def test_record_never_raises_on_bad_arguments(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise ValueError("no repr for you")

    dbg = AgentDebug()
    with caplog.at_level(logging.WARNING), dbg.trace(goal="g") as t:
        assert t.record("not-a-type", output="x") == "e0"  # type: ignore[arg-type]
        assert t.record(EventType.MESSAGE, step_index="seven", output="y") == "e1"  # type: ignore[arg-type]
        assert t.record(EventType.MESSAGE, step_index=-3, output="z") == "e2"
        assert t.record(EventType.TOOL_RESULT, output=Unprintable()) == "e3"
        assert t.record(EventType.TOOL_RESULT, output={1, 2}, input=b"\xff\xfe") == "e4"
        t.record(EventType.TOOL_RESULT, output="Datei nicht gefunden: \xfc".encode("cp1252"))
    events = open_store(home).load_trajectory(t.id).events
    assert len(events) == 6
    assert events[0].type is EventType.SPAN and events[0].metadata["original_type"] == "not-a-type"
    assert events[1].step_index == 1 and events[2].step_index == 2
    assert events[3].output == "<unprintable Unprintable>"  # its repr raised: the text says so
    assert sorted(events[4].output) == [1, 2]
    # bytes that are not UTF-8 are kept whole, in base64 (not replacement characters)
    assert events[4].input == {"bytes_base64": "//4=", "length": 2}
    # mostly text (another code page): readable beside the bytes
    assert events[5].output["text"] == "Datei nicht gefunden: \ufffd"
    assert base64.b64decode(events[5].output["bytes_base64"]).decode("cp1252").endswith("ü")
    assert "unknown event type" in caplog.text


def test_text_that_utf8_cannot_hold_is_escaped_and_nothing_else_is_lost(home: Path) -> None:
    bad = "pasted \udfff text"  # a lone surrogate, as a broken decode leaves one
    dbg = AgentDebug()
    with dbg.trace(goal=bad, reference_answer=bad) as t:
        t.record(EventType.TOOL_RESULT, input={"q": bad, bad: 1}, output=bad, module="m")
        t.record(EventType.ERROR, error=ValueError(bad))
        t.set_outcome(OutcomeStatus.FAILURE, final_answer=bad, reason=bad, error=ValueError(bad))
    dbg.close()
    store = open_store(home)
    (summary,) = store.list_runs()  # the run is in the store, not kept in memory only
    run = store.load_trajectory(t.id)
    escaped = "pasted \\udfff text"
    assert summary.goal == run.goal == run.reference_answer == escaped
    result, error = run.events  # (a failed run's answer given to set_outcome: no event)
    assert run.outcome.final_answer == escaped
    assert result.output == escaped and result.input == {"q": escaped, escaped: 1}
    assert result.module == "m"  # the rest of the event is kept
    assert error.error is not None and error.error.message == escaped
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.reason == run.outcome.final_answer == escaped


def test_an_unprintable_value_or_error_costs_only_itself(home: Path) -> None:
    class Handle:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Lazy(ValueError):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_RESULT, output={"handle": Handle(), "answer": "42"})
        t.record(EventType.ERROR, error=Lazy())
        t.set_outcome(OutcomeStatus.FAILURE, reason="it broke", error=Lazy())
    dbg.close()
    run = open_store(home).load_trajectory(t.id)
    result, error = run.events
    assert result.output == {"handle": "<unprintable Handle>", "answer": "42"}
    assert error.error is not None and (error.error.type, error.error.message) == ("Lazy", "Lazy")
    assert run.outcome.reason == "it broke" and run.outcome.error is not None


def test_a_final_answer_over_the_event_limit_is_kept_as_its_head_in_the_header(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", str(64 * 1024))
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.set_outcome(OutcomeStatus.SUCCESS, final_answer=["y" * 200_000])
    dbg.close()
    answer = open_store(home).load_trajectory(t.id).outcome.final_answer
    assert answer["truncated"] is True and answer["original_bytes"] > 200_000
    assert answer["head"] == '["' + "y" * (8 * 1024 - 2)
    with dbg.trace(goal="g") as t2:
        final = {"rows": "x" * 200_000, "n": 3, "ids": {7}, "when": datetime(2026, 1, 2)}
        t2.set_outcome(OutcomeStatus.SUCCESS, final_answer=final)
    dbg.close()
    stored = open_store(home).load_trajectory(t2.id)
    assert stored.outcome.status is OutcomeStatus.SUCCESS  # the header was written
    answer = stored.outcome.final_answer
    assert answer["n"] == 3  # the small fields beside the huge one are kept, as JSON
    assert answer["ids"] == [7] and answer["when"] == "2026-01-02T00:00:00"
    rows = answer["rows"]
    assert rows["truncated"] is True and rows["original_bytes"] > 200_000
    assert rows["head"] == "x" * (8 * 1024)


def test_a_goal_the_size_of_a_document_is_kept_as_its_head(home: Path) -> None:
    """An integration takes the goal from the user's first message, which may be a
    whole document; the header, in every listing and prompt, keeps its head."""
    from agentdebug.capture.fields import GOAL_CHARS

    dbg = AgentDebug()
    with dbg.trace(goal="Summarise: " + "z" * 2_000_000) as t:
        t.record(EventType.USER_INPUT, input="the document")
    dbg.close()
    store = open_store(home)
    goal = store.load_trajectory(t.id).goal or ""
    assert goal.startswith("Summarise: zzz") and len(goal) < GOAL_CHARS + 100
    assert goal.endswith(f"... [goal cut: {2_000_011 - GOAL_CHARS:,} more characters]")
    (summary,) = store.list_runs()
    assert summary.goal == goal
    assert (home / "agentdebug.db").stat().st_size < 500_000


def test_keys_and_numbers_json_lacks_become_text_and_the_structure_is_kept(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_RESULT, output={"big": 2**70, (1, 2): "pair", "ok": [1, "a"]})
    dbg.close()
    (event,) = open_store(home).load_trajectory(t.id).events
    assert event.output == {"big": str(2**70), "(1, 2)": "pair", "ok": [1, "a"]}
    note = event.metadata["capture_notes"]["output_coerced"]
    assert note.startswith("keys or integers JSON cannot hold were written as their text")


def test_a_payload_that_refers_back_to_itself_twice_is_kept_at_once(home: Path) -> None:
    parent: dict[str, object] = {"name": "root"}
    parent["kids"] = [{"name": "a", "up": parent}, {"name": "b", "up": parent}, (1, 2)]
    parent[(3, 4)] = 2**70  # and keys and numbers to coerce, so every walk runs
    dbg = AgentDebug()

    def record() -> str:
        with dbg.trace(goal="g") as t:
            t.record(EventType.TOOL_CALL, input=parent, output="\ud800")
        dbg.close()
        return t.id

    run_id = finishes_within(60, record)  # a walk without memory doubles per level
    (event,) = open_store(home).load_trajectory(run_id).events
    # only the references back are markers: the structure around them is kept
    cycle = "<cycle: refers back to the dict that holds it>"
    assert event.input["name"] == "root" and event.output == "\\ud800"
    assert [kid["up"] for kid in event.input["kids"][:2]] == [cycle, cycle]
    assert event.input["(3, 4)"] == str(2**70)


def test_keys_that_would_read_alike_as_json_are_all_kept(home: Path) -> None:
    """``{1: "a", "1": "b"}``: JSON writes both keys as "1", and reading it back
    keeps only the last (before, "a" was lost without a word); the key that is not
    a string is written with its type."""
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_RESULT, output={1: "a", "1": "b", "rows": [{True: 1, "true": 2}]})
        t.record(EventType.TOOL_RESULT, output={1: "a", "1": "b", "big": 2**70})  # (coerced)
    dbg.close()
    plain, coerced = open_store(home).load_trajectory(t.id).events
    assert plain.output == {"1 (int)": "a", "1": "b", "rows": [{"true (bool)": 1, "true": 2}]}
    assert coerced.output == {"1 (int)": "a", "1": "b", "big": str(2**70)}


def test_a_payload_nested_past_what_repr_can_print_keeps_its_other_keys(home: Path) -> None:
    """A value nested deeper than Python's recursion limit has neither a JSON form
    nor a repr: its first 100 levels are kept, the rest left out with a note
    (before, the whole field was the text ``<unprintable dict>``, and the keys
    beside the deep part were lost)."""
    deep: dict[str, object] = {}
    cursor = deep
    for _ in range(3 * sys.getrecursionlimit()):
        cursor["k"] = {}
        cursor = cursor["k"]  # type: ignore[assignment]
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.AGENT_END, output={"tree": deep, "status": "kept", (1, 2): Path("/x")})
    dbg.close()
    (event,) = open_store(home).load_trajectory(t.id).events
    assert event.output["status"] == "kept" and event.output["(1, 2)"] == repr(Path("/x"))
    level, depth = event.output["tree"], 1
    while isinstance(level, dict):
        level, depth = level["k"], depth + 1
    assert depth == 100 and level == "<dict left out, 100 levels down>"
    assert "output_cut" in event.metadata["capture_notes"]


def test_wrongly_typed_fields_are_coerced_and_the_run_stays_readable(home: Path) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque()"

    loop: list[object] = []
    loop.append(loop)  # a self-referencing payload
    dbg = AgentDebug()
    with dbg.trace(goal={"task": "odd"}, run_id=7, agents=[{"name": "alpha"}, 3]) as t:  # type: ignore[arg-type]
        t.record(EventType.MESSAGE, agent_name=7, output="a")  # type: ignore[arg-type]
        t.record(EventType.MESSAGE, metadata="x", duration_ms="slow", output="b")  # type: ignore[arg-type]
        t.record(EventType.MESSAGE, parent_id=3, module=["m"], duration_ms=-1, output="c")  # type: ignore[arg-type]
        t.record(EventType.TOOL_RESULT, input={"keep": "me"}, output=loop)
        t.record(EventType.TOOL_RESULT, input=2**70, output=Opaque())
        t.record(EventType.MESSAGE, event_id=5, output="d")  # type: ignore[arg-type]
        t.record(EventType.MESSAGE, event_id="same", output="first")
        t.record(EventType.MESSAGE, event_id="same", output="second")
        t.record(EventType.MESSAGE, event_id="e0", output="looks automatic")
        t.record(
            EventType.MESSAGE, artifacts=[{"name": "shot", "uri": "file:///s.png"}], output="e"
        )  # type: ignore[list-item]
        t.record(EventType.FINAL_ANSWER, output=Opaque())
        t.set_outcome("success", final_answer=Opaque())
        report = t.analyze()
    assert report.trajectory_id == "7"
    stored = open_store(home).load_trajectory("7")
    assert stored.goal == "{'task': 'odd'}" and [a.name for a in stored.agents] == ["alpha", "3"]
    assert (
        stored.outcome.status is OutcomeStatus.SUCCESS and stored.outcome.final_answer == "Opaque()"
    )
    e = stored.events
    assert (
        e[0].agent_name == "7"
        and e[0].metadata["capture_notes"]["agent_name_coerced_from"] == "int"
    )
    assert e[1].metadata["value"] == "x" and e[1].duration_ms is None
    assert e[1].metadata["capture_notes"]["duration_ms_dropped"] == "'slow'"
    assert (e[2].parent_id, e[2].module, e[2].duration_ms) == ("3", "['m']", None)
    assert e[3].input == {"keep": "me"}  # the good field survives the bad one
    assert e[3].output == ["<cycle: refers back to the list that holds it>"]
    assert "output_cycles" in e[3].metadata["capture_notes"]
    assert e[4].output == "Opaque()"
    ids = [ev.id for ev in e]
    assert len(ids) == len(set(ids)) and "5" in ids and "same" in ids and "e0#u" in ids
    assert e[9].artifacts[0].uri == "file:///s.png"


def test_a_step_or_reference_no_run_could_hold_is_coerced_and_nothing_else_is_lost(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A step past 64 bits once failed its batch's encoding and every event after
    it; artifacts and a checkpoint of the wrong shape made the stored run unreadable."""
    dbg = AgentDebug()
    with dbg.trace("odd steps", run_id="odd") as t:
        t.record(EventType.MESSAGE, step_index=1, output="one")
        t.record(EventType.MESSAGE, step_index=2**64, output="huge")
        t.record(EventType.MESSAGE, step_index=2.5, output="half")  # type: ignore[arg-type]
        t.record(EventType.MESSAGE, artifacts=[1, "x"], output="bad artifacts")  # type: ignore[list-item]
        t.record(EventType.MESSAGE, checkpoint="ck1", output="bad checkpoint")  # type: ignore[arg-type]
        t.record(EventType.TOOL_RESULT, error="TimeoutError: slow", output="late")
        t.record(EventType.FINAL_ANSWER, output="done")
    run = open_store(home).load_trajectory("odd")  # readable
    assert [ev.output for ev in run.events] == [
        "one",
        "huge",
        "half",
        "bad artifacts",
        "bad checkpoint",
        "late",
        "done",
    ]
    assert [ev.step_index for ev in run.events][:3] == [1, 2, 2]
    notes = [ev.metadata.get("capture_notes") or {} for ev in run.events]
    assert "not a list of artifacts" in notes[3]["artifacts"] and not run.events[3].artifacts
    assert "not a checkpoint reference" in notes[4]["checkpoint"]
    assert run.events[4].checkpoint is None
    said = caplog.text
    assert "invalid step_index 18446744073709551616" in said and "2.5 recorded as 2" in said


def test_a_recorded_payload_is_kept_as_it_was_when_recorded(home: Path) -> None:
    dbg = AgentDebug()
    messages = [{"role": "user", "content": "hi"}]
    with dbg.trace(goal="snapshot") as t:
        t.record(EventType.LLM_CALL, input=messages)
        messages.append({"role": "assistant", "content": "hello"})  # the agent goes on
        t.record(EventType.LLM_CALL, input=messages)
    events = open_store(home).load_trajectory(t.id).events
    assert len(events[0].input) == 1 and len(events[1].input) == 2


def test_an_exception_overrides_a_success_claimed_earlier(home: Path) -> None:
    dbg = AgentDebug()
    with pytest.raises(ValueError), dbg.trace(goal="g") as t:
        t.set_outcome("success")
        raise ValueError("late failure")
    outcome = open_store(home).load_trajectory(t.id).outcome
    assert outcome.status is OutcomeStatus.FAILURE
    assert outcome.reason == "the run raised an exception after it was marked success"


def test_reusing_a_run_id_starts_the_run_afresh(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="first", run_id="same") as t:
        for i in range(3):
            t.record(EventType.MESSAGE, agent_name="a", output=f"first {i}")
    with dbg.trace(goal="second", run_id="same") as t:
        t.record(EventType.MESSAGE, agent_name="b", output="second 0")
    stored = open_store(home).load_trajectory("same")
    assert [e.output for e in stored.events] == ["second 0"]
    assert stored.goal == "second"
    (summary,) = open_store(home).list_runs()
    assert summary.n_events == 1


def test_a_broken_store_is_logged_and_the_agent_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("I am a file, so no database can be created under me")
    dbg = AgentDebug(blocker / "sub" / "agentdebug.db")
    with caplog.at_level(logging.ERROR), dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_RESULT, agent_name="tool", error="exploded")
        report = t.analyze()
    assert "cannot open the store" in caplog.text
    assert report.failure_modes == ["system.tool_error"]
    assert t.trajectory().events[0].error is not None


def test_a_store_that_fails_mid_run_keeps_the_events_in_memory(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbg = AgentDebug()
    with caplog.at_level(logging.ERROR), dbg.trace(goal="g") as t:
        t.record(EventType.PLAN, agent_name="a", output="first")
        t.flush()

        def broken(*args: object, **kwargs: object) -> None:
            raise StoreError("disk full")

        assert dbg.store is not None
        monkeypatch.setattr(dbg.store, "append_events", broken)
        t.record(EventType.TOOL_RESULT, agent_name="b", error="second")
        t.flush()
        trajectory = t.trajectory()
    assert "disk full" in caplog.text
    assert [e.agent_name for e in trajectory.events] == ["a", "b"]
    assert t.store_failed


def test_threads_record_into_one_session_without_losing_events(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="threads") as t:

        def work(n: int) -> None:
            for i in range(500):
                t.record(EventType.TOOL_CALL, agent_name=f"worker-{n}", input={"i": i})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    events = open_store(home).load_trajectory(t.id).events
    assert len(events) == 2000
    assert len({e.id for e in events}) == 2000
    for n in range(4):
        mine = [e.input["i"] for e in events if e.agent_name == f"worker-{n}"]
        assert mine == list(range(500))


def test_asyncio_tasks_each_see_their_own_session(home: Path) -> None:
    dbg = AgentDebug()

    async def agent(name: str) -> str:
        async with dbg.trace(goal=name) as t:
            for i in range(20):
                record(EventType.MESSAGE, agent_name=name, output=f"{name} {i}")
                await asyncio.sleep(0)
                session = current_session()
                assert session is t
            return t.id

    async def main() -> list[str]:
        return list(await asyncio.gather(agent("alpha"), agent("beta")))

    ids = asyncio.run(main())
    store = open_store(home)
    for run_id, name in zip(ids, ["alpha", "beta"], strict=True):
        events = store.load_trajectory(run_id).events
        assert {e.agent_name for e in events} == {name}
        assert len(events) == 20
    assert record(EventType.MESSAGE, output="outside any session") is None


def test_an_oversized_event_is_kept_truncated_not_dropped(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", str(64 * 1024))
    dbg = AgentDebug()
    big = "x" * (1024 * 1024)
    with dbg.trace(goal="big") as t:
        t.record(EventType.TOOL_RESULT, agent_name="reader", output=big, input="small")
    event = open_store(home).load_trajectory(t.id).events[0]
    assert event.input == "small"
    assert event.output["truncated"] is True
    assert event.output["original_bytes"] > 1024 * 1024
    assert event.metadata["output_truncated_bytes"] > 1024 * 1024


def test_an_oversized_payload_keeps_its_small_fields_and_truncates_the_large(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's update with a huge message list beside small fields: the small
    fields are kept as they were, each huge value is a marker with its head, also
    a level down, and for a payload frozen at record time (a dict is snapshotted)
    as for one an integration emitted."""
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", str(64 * 1024))
    dbg = AgentDebug()
    update = {
        "step": 7,
        "messages": ["m" * 1000] * 1000,
        "meta": {"node": "agent", "blob": "b" * 500_000},
    }
    with dbg.trace(goal="big") as t:
        t.record(EventType.AGENT_END, agent_name="agent", output=update)
        emit = t.emitter()
        emit(
            {
                "id": None,
                "type": EventType.AGENT_END,
                "step_index": 2,
                "timestamp": None,
                "agent_name": "agent",
                "output": update,
            },
            "agent",
        )
    recorded, emitted = open_store(home).load_trajectory(t.id).events
    for event in (recorded, emitted):
        out = event.output
        assert out["step"] == 7 and out["meta"]["node"] == "agent"
        assert out["messages"]["truncated"] is True
        assert out["messages"]["head"].startswith('["mmm')
        assert out["meta"]["blob"]["truncated"] is True
        assert out["meta"]["blob"]["head"].startswith("bbb")
        assert event.metadata["output_truncated_bytes"] > 1_500_000
        assert len(event.model_dump_json()) < 64 * 1024


def test_an_oversized_metadata_value_is_truncated_not_the_whole_event(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large value in metadata (an integration keeps a tool's artifact there) is a
    marker with its head; the event's output, parent and other metadata are kept
    (before, the event was cut to its id, type and step)."""
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", str(64 * 1024))
    dbg = AgentDebug()
    with dbg.trace(goal="big") as t:
        call = t.record(EventType.TOOL_CALL, agent_name="agent", input={"q": "docs"})
        t.record(
            EventType.TOOL_RESULT,
            agent_name="tools",
            output="found docs",
            parent_id=call,
            metadata={"tool_name": "search", "artifact": {"docs": ["d" * 1000] * 1000}},
        )
    event = open_store(home).load_trajectory(t.id).events[1]
    assert event.output == "found docs" and event.parent_id == call
    assert event.metadata["tool_name"] == "search"
    assert event.metadata["artifact"]["docs"]["truncated"] is True
    assert event.metadata["metadata_truncated_bytes"] > 1_000_000
    # many values each well under the limit, too much together: the largest go first
    with dbg.trace(goal="many") as t:
        pages = {f"page{i}": "p" * 8000 for i in range(10)}
        t.record(EventType.TOOL_RESULT, output="ok", metadata={"tool_name": "read", **pages})
    event = open_store(home).load_trajectory(t.id).events[0]
    assert event.output == "ok" and event.metadata["tool_name"] == "read"
    assert any(event.metadata[f"page{i}"] == "p" * 8000 for i in range(10))  # some whole
    assert any(isinstance(event.metadata[f"page{i}"], dict) for i in range(10))


KILLED_AGENT = textwrap.dedent(
    """
    import sys, time
    from agentdebug import AgentDebug, EventType
    dbg = AgentDebug(sys.argv[1], flush_interval=0.05)
    t = dbg.trace(goal="will be killed", framework="test")
    t.__enter__()
    for i in range(300):
        t.record(EventType.TOOL_CALL, agent_name="worker", input={"i": i})
    t.flush()
    print(t.id, flush=True)
    while True:  # keep recording until killed
        t.record(EventType.TOOL_CALL, agent_name="worker", input={"i": -1})
        time.sleep(0.001)
    """
)


def test_a_process_killed_mid_run_keeps_everything_flushed(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_AGENT, str(store_dir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    time.sleep(0.3)  # several background flushes happen
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    db = sqlite3.connect(store_dir / "agentdebug.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    trajectory = open_store(store_dir).load_trajectory(run_id)
    inputs = [e.input["i"] for e in trajectory.events]
    assert inputs[:300] == list(range(300))
    assert len(inputs) > 300  # events flushed in the background after the explicit flush
    assert trajectory.outcome.status is OutcomeStatus.RUNNING
    # The store is still writable after the crash.
    dbg = AgentDebug(store_dir)
    with dbg.trace(goal="after the crash") as t:
        t.record(EventType.MESSAGE, output="fine")
    assert open_store(store_dir).load_trajectory(t.id).events[0].output == "fine"


def test_jsonl_store_capture_round_trip(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path / "runs.jsonl")
    with dbg.trace(goal="jsonl", framework="x") as t:
        t.record(EventType.PLAN, agent_name="p", output="plan")
        t.record(EventType.TOOL_RESULT, agent_name="q", error="Checkout timeout")
        report = t.analyze()
    dbg.close()
    store = open_store(tmp_path / "runs.jsonl")
    trajectory: AgentTrajectory = store.load_trajectory(t.id)
    assert [e.agent_name for e in trajectory.events] == ["p", "q"]
    assert trajectory.outcome.status is OutcomeStatus.FAILURE
    assert store.load_reports(t.id)[0].id == report.id
