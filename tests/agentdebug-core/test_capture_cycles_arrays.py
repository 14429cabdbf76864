"""Payloads that refer back to themselves keep everything but the reference
back; numbers and arrays of numeric libraries are kept as numbers and lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.store import open_store

CYCLE = "<cycle: refers back to the dict that holds it>"


def test_a_cycle_costs_only_the_reference_back_not_the_field(home: Path) -> None:
    state: dict[str, Any] = {"user": "bob", "history": []}
    state["history"].append({"parent": state})
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(
            EventType.TOOL_CALL,
            agent_name="a",
            input={"query": "refund A1", "ctx": state},
            metadata={"tool_name": "issue_refund", "ctx": state},
        )
        t.set_outcome("failure", final_answer={"answer": "no", "state": state})
    stored = open_store(home).load_trajectory(t.id)
    (event,) = stored.events  # (a failed run's answer given to set_outcome: no event)
    kept = {"user": "bob", "history": [{"parent": CYCLE}]}
    assert stored.outcome.final_answer == {"answer": "no", "state": kept}
    assert event.input == {"query": "refund A1", "ctx": kept}
    assert event.metadata["tool_name"] == "issue_refund"
    assert event.metadata["ctx"] == kept
    notes = event.metadata["capture_notes"]
    assert "input_cycles" in notes and "metadata_cycles" in notes
    assert stored.outcome.final_answer == {"answer": "no", "state": kept}


class FakeArray:
    """numpy.ndarray's protocol, and its repr that elides all but six items."""

    def __init__(self, n: int) -> None:
        self.data = list(range(n))

    @property
    def nbytes(self) -> int:
        return 8 * len(self.data)

    def tolist(self) -> list[int]:
        return list(self.data)

    def __repr__(self) -> str:
        return f"array([{self.data[0]}, {self.data[1]}, ..., {self.data[-1]}])"


class F64(float):  # numpy.float64 is a float subclass
    def __repr__(self) -> str:
        return f"np.float64({float(self)})"


class I64:  # numpy.int64 is not an int subclass; it has tolist()
    def tolist(self) -> int:
        return 7


def test_array_likes_and_float_subclasses_are_kept_as_data(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(
            EventType.TOOL_RESULT,
            output={"embedding": FakeArray(1000), "score": F64(0.93), "n": I64()},
        )
        t.record(EventType.TOOL_RESULT, output=F64(0.5))
    first, second = open_store(home).load_trajectory(t.id).events
    assert first.output == {"embedding": list(range(1000)), "score": 0.93, "n": 7}
    assert second.output == 0.5


def test_an_array_bigger_than_an_event_is_a_marker_not_a_list(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", "4096")
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.record(EventType.TOOL_RESULT, output={"embedding": FakeArray(10_000), "k": 1})
    (event,) = open_store(home).load_trajectory(t.id).events
    assert isinstance(event.output, dict) and event.output["k"] == 1
    marker = event.output["embedding"]
    assert marker["truncated"] is True and marker["original_bytes"] == 80_000
    assert marker["head"].startswith("array([0, 1, ...")
