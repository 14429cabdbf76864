"""``record`` and ``set_outcome`` given what they do not expect keep what they
can: nothing raised into the agent, nothing of the event dropped."""

from __future__ import annotations

import logging
from pathlib import Path

import agentdebug
import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.capture import fields
from agentdebug.store import open_store


def test_unknown_keywords_and_a_positional_agent_are_kept_not_raised(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fields, "_SAID", set())
    dbg = AgentDebug()
    with caplog.at_level(logging.WARNING, "agentdebug.capture"), dbg.trace(goal="g") as t:
        agentdebug.record(EventType.TOOL_CALL, agent="searcher", input={"q": "x"})
        t.record(EventType.TOOL_CALL, agent_name="s", timestamp="2024-01-01T00:00:00Z")  # type: ignore[call-arg]
        t.record(EventType.TOOL_CALL, "searcher")  # type: ignore[call-arg]
        t.record(EventType.TOOL_RESULT, agent_name="s", duration=1.5, metadata={"k": 1})  # type: ignore[call-arg]
        t.record(EventType.TOOL_RESULT, agent="again")  # type: ignore[call-arg]
    events = open_store(home).load_trajectory(t.id).events
    assert len(events) == 5
    assert events[0].input == {"q": "x"}
    assert events[0].metadata["unknown_fields"] == {"agent": "searcher"}
    assert events[1].metadata["unknown_fields"] == {"timestamp": "2024-01-01T00:00:00Z"}
    assert events[2].agent_name == "searcher" and "unknown_fields" not in events[2].metadata
    assert events[3].metadata == {"k": 1, "unknown_fields": {"duration": 1.5}}
    said = [r.getMessage() for r in caplog.records if "has no field" in r.getMessage()]
    assert len(said) == 3  # 'agent' said once though given twice
    assert "agent_name" in said[0]


def test_an_unknown_type_with_metadata_that_is_not_a_dict_keeps_the_event(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        assert t.record("not-a-type", agent_name="a", metadata=[1, 2]) is not None  # type: ignore[arg-type]
    (event,) = open_store(home).load_trajectory(t.id).events
    assert event.type is EventType.SPAN and event.agent_name == "a"
    assert event.metadata["original_type"] == "not-a-type"
    assert event.metadata["value"] == [1, 2]


def test_an_unknown_outcome_status_keeps_the_answer_and_the_reason(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = AgentDebug()
    with caplog.at_level(logging.WARNING, "agentdebug.capture"), dbg.trace(goal="g") as t:
        t.set_outcome("bogus", final_answer="42", reason="the checker was unsure")
    outcome = open_store(home).load_trajectory(t.id).outcome
    assert outcome.status is OutcomeStatus.UNKNOWN and outcome.final_answer == "42"
    assert outcome.reason is not None
    assert outcome.reason.startswith("the checker was unsure") and "'bogus'" in outcome.reason
    assert any("'bogus'" in r.getMessage() for r in caplog.records)
