"""A final answer whose figure for a thing differs from a tool's figure for it
("revenue was $5.1M" where get_financials gave "revenue_musd": 4.2): blamed on the
answer, with a fix naming the tool's figure."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

RESULT = '{"company": "Northwind", "quarter": "Q3-2024", "revenue_musd": 4.2, "qoq_pct": -8.0}'


def reported(answer: str, *, status: OutcomeStatus = OutcomeStatus.FAILURE) -> AgentTrajectory:
    meta = {"tool_name": "get_financials"}
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input="Northwind's Q3 2024 revenue?"),
        ev(1, EventType.TOOL_CALL, "researcher", input={"company": "Northwind"}, metadata=meta),
        ev(2, EventType.TOOL_RESULT, "researcher", output=RESULT, parent_id="e1", metadata=meta),
        ev(3, EventType.FINAL_ANSWER, "supervisor", output=answer),
    ]
    run = traj(*events)
    return run.model_copy(
        update={
            "goal": "Northwind's Q3 2024 revenue?",
            "outcome": Outcome(status=status, reason="wrong revenue"),
        }
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "figure_contradicted"]


def test_an_answer_s_figure_a_tool_gave_otherwise_is_blamed_with_a_fix() -> None:
    run = reported("Northwind's Q3 2024 revenue was $5.1M, up 3% quarter over quarter.")
    (finding,) = found(run)
    assert finding.message == (
        "the final answer gives $5.1M for revenue, which no tool returned: get_financials at "
        "step 2 gave 4.2"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "supervisor",
        3,
        "reflection.hallucinated_fact",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 3, supervisor: give revenue as get_financials returned it at step 2 "
        '(\'-2024", "revenue_musd": 4.2\'), not $5.1M, which no tool returned.'
    )


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        # the tool's figure, or one made of it
        ("Northwind's Q3 2024 revenue was $4.2M, down 8%.", OutcomeStatus.FAILURE),
        ("Northwind's revenue was $4.20M; twice that is 8.4.", OutcomeStatus.FAILURE),
        # a figure of another thing than the tool gave
        ("Northwind's headcount was 57 in Q3 2024.", OutcomeStatus.FAILURE),
        # an answer that says it could not tell
        ("I don't know: the revenue was 5.1 or so.", OutcomeStatus.FAILURE),
        # a run that succeeded
        ("Northwind's Q3 2024 revenue was $5.1M.", OutcomeStatus.SUCCESS),
    ],
)
def test_what_is_not_a_contradicted_figure(answer: str, status: OutcomeStatus) -> None:
    assert not found(reported(answer, status=status))
