"""The fix a report gives without a model is the blamed mode's remedy, made concrete:
when the blamed step is a tool call that failed, it says which call, with what
arguments, and how it failed, so that a rerun's directive (and a reader) has
something to act on. Before, it was the remedy alone ("Call the tool again with
arguments that match its schema exactly."), the same for every run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentdebug.diagnose import diagnose
from agentdebug.io import import_paths
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)

BOOKING = Path(__file__).parents[2] / "examples" / "failed_booking.json"


def test_the_fix_names_the_failing_call_its_arguments_and_its_error() -> None:
    run = import_paths([BOOKING]).runs[0].trajectory  # (its results link to no call)
    report = diagnose(run)
    assert report.fix is not None
    assert report.fix.directive == (
        'At step 3, searcher: search_fares({"date":"14/12/2026","destination":"DEN",'
        '"nonstop":true,"origin":"BOS"}) failed: "ValidationError: date must be YYYY-MM-DD, '
        "got '14/12/2026'\". Call the tool again with arguments that match its schema exactly."
    )


def event(i: int, kind: EventType, **fields: Any) -> AgentEvent:
    return AgentEvent(id=f"e{i}", type=kind, step_index=fields.pop("step", i), **fields)


def parallel_lookups(second_fails: bool) -> AgentTrajectory:
    """Two calls of one tool in one step, linked to their results by call id; the
    results come back in the other order."""
    meta = {"tool_name": "lookup_order"}
    return AgentTrajectory(
        id="parallel",
        goal="refund orders A1 and B2",
        framework="test",
        events=[
            event(0, EventType.USER_INPUT, input="refund orders A1 and B2"),
            event(
                1,
                EventType.TOOL_CALL,
                agent_name="agent",
                input={"order_id": "A1"},
                metadata={**meta, "tool_call_id": "c1"},
            ),
            event(
                2,
                EventType.TOOL_CALL,
                agent_name="agent",
                step=1,
                input={"order_id": "b-2"},
                metadata={**meta, "tool_call_id": "c2"},
            ),
            event(
                3,
                EventType.TOOL_RESULT,
                agent_name="tools",
                step=2,
                metadata={**meta, "tool_call_id": "c2"},
                output=None if second_fails else "order b-2: $5",
                error=ErrorInfo(type="KeyError", message="no order 'b-2'")
                if second_fails
                else None,
            ),
            event(
                4,
                EventType.TOOL_RESULT,
                agent_name="tools",
                step=2,
                metadata={**meta, "tool_call_id": "c1"},
                output="order A1: $42",
            ),
            event(
                5,
                EventType.FINAL_ANSWER,
                agent_name="agent",
                step=3,
                output="Both orders are refunded.",
            ),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="B2 was not refunded"),
    )


def test_among_parallel_calls_of_one_tool_the_fix_names_the_one_that_failed() -> None:
    report = diagnose(parallel_lookups(second_fails=True))
    root = report.root_cause
    assert root is not None and report.fix is not None
    assert 'lookup_order({"order_id":"b-2"}) failed: "KeyError: no order \'b-2\'"' in (
        report.fix.directive
    )
    assert "A1" not in report.fix.directive


def test_a_blamed_call_that_did_not_fail_gets_the_remedy_alone() -> None:
    from agentdebug.plugins import get_registry
    from agentdebug.remedies import fix_of
    from agentdebug.schema import Hypothesis

    reg = get_registry()
    root = Hypothesis(
        agent_name="agent",
        step_index=1,
        event_id="e2",  # the call for b-2, which answered
        strategy="test",
        confidence=0.5,
        rationale="looked up the wrong order",
        mode_id="action.wrong_tool",
    )
    fix = fix_of(root, reg, parallel_lookups(second_fails=False), "agent")
    assert fix is not None
    assert fix.directive == f"At step 1, agent: {reg.failure_modes['action.wrong_tool'].remedy}"
