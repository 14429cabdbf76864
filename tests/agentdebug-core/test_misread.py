"""A final answer whose number swaps the digits of a tool's result: a misreading the
free tier can tell from a computed number (a probe's "$24.00" for a tool's "$42.00"
was a default guess at the run's first step)."""

from __future__ import annotations

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj


def order_run(
    result: str,
    answer: str,
    *,
    goal: str = "How much did order A123 cost?",
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=goal),
        ev(
            1,
            EventType.TOOL_CALL,
            "agent",
            input={"order_id": "A123"},
            metadata={"tool_name": "lookup_order"},
        ),
        ev(
            2,
            EventType.TOOL_RESULT,
            "agent",
            output=result,
            parent_id="e1",
            metadata={"tool_name": "lookup_order"},
        ),
        ev(3, EventType.FINAL_ANSWER, "agent", output=answer),
    )
    return run.model_copy(
        update={"goal": goal, "outcome": Outcome(status=status, reason="wrong total")}
    )


def test_a_number_with_the_results_digits_swapped_is_blamed_on_the_answer() -> None:
    run = order_run("order A123: $42.00, shipped", "Order A123 cost $24.00.")
    report = diagnose(run)
    (found,) = [f for f in report.findings if f.rule_id == "misread_number"]
    assert found.message == (
        "the final answer says 24.00 where the result at step 2 says 42.00: the same "
        "digits, swapped"
    )
    assert [e.quote for e in found.evidence] == ["24.00", "order A123: $42.00, shipped"]
    root = report.root_cause
    assert root is not None
    assert (root.step_index, root.mode_id) == (3, "observation.output_misread")
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 3, agent: the final answer says 24.00 where the result at step 2 says "
        "42.00: the same digits, swapped. "
    )


@pytest.mark.parametrize(
    ("result", "answer", "goal", "status"),
    [
        # a number the agent computed from the result's
        ("items: $42.00 and $18.00", "Order A123 cost $60.00.", None, OutcomeStatus.FAILURE),
        # the answer's number was in the task
        (
            "order A123: $42.00",
            "You paid $24.",
            "I paid $24 for A123; what was it?",
            OutcomeStatus.FAILURE,
        ),
        # a run that succeeded
        ("order A123: $42.00", "Order A123 cost $24.00.", None, OutcomeStatus.SUCCESS),
        # the point moved is not a swap of digits ("4.2" is not "42")
        ("order A123: $42.00", "Order A123 cost $4.20.", None, OutcomeStatus.FAILURE),
        # one digit repeated has no order to swap
        ("order A123: 11 items", "Order A123 has 11 items.", None, OutcomeStatus.FAILURE),
        # a part of a date, or a time, is no quantity ("03" of 2025-03-14 is not 30)
        (
            "LH400 2025-03-14: cancelled; LH402 departs 15:40",
            "Be at the gate 30 minutes early.",
            None,
            OutcomeStatus.FAILURE,
        ),
        ("order A123 shipped 2025-03-14", "It shipped 41 days ago.", None, OutcomeStatus.FAILURE),
    ],
)
def test_what_is_not_a_swapped_number(
    result: str, answer: str, goal: str | None, status: OutcomeStatus
) -> None:
    run = order_run(result, answer, goal=goal or "How much did order A123 cost?", status=status)
    assert not [f for f in RulePack().detect(run) if f.rule_id == "misread_number"]
