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
        "('revenue_musd: 4.2'), not $5.1M, which no tool returned."
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


def told(answer: str, output: Any, goal: str = "How did Northwind do last quarter?") -> Any:
    """One tool result (``output``), then ``answer``, in a failed run."""
    meta = {"tool_name": "get_financials"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=goal),
        ev(1, EventType.TOOL_CALL, "researcher", input={"company": "Northwind"}, metadata=meta),
        ev(2, EventType.TOOL_RESULT, "researcher", output=output, parent_id="e1", metadata=meta),
        ev(3, EventType.FINAL_ANSWER, "supervisor", output=answer),
    )
    return run.model_copy(
        update={"goal": goal, "outcome": Outcome(status=OutcomeStatus.FAILURE, reason="wrong")}
    )


@pytest.mark.parametrize(
    ("answer", "output"),
    [
        # the tool's figure in other units, or rounded to the answer's last digit
        ("Northwind's revenue was $4,200,000.", '{"revenue_musd": 4.2}'),
        ("Northwind's revenue was $4,200M.", '{"revenue_busd": 4.2}'),
        ("Northwind's revenue was about $1.2M.", '{"revenue_usd": 1234567}'),
        ("Northwind's revenue was $4.3M.", '{"revenue_musd": 4.27}'),
        ("Northwind's margin was 26%.", '{"margin": 0.262}'),
        ("The temperature was 70.7 F.", '{"temperature_c": 21.5}'),
        ("The duration was 90 minutes.", '{"duration_seconds": 5400}'),
        # made of the tool's figures: a total, a mean, a growth
        (
            "Total revenue for Q1-Q3 was $13.2M.",
            '{"q1_revenue_musd": 4.0, "q2_revenue_musd": 4.5, "q3_revenue_musd": 4.7}',
        ),
        ("Average revenue was $4.4M.", '{"q1_revenue": 4.0, "q2_revenue": 4.5, "q3_revenue": 4.7}'),
        ("Revenue grew 12.5% to $4.5M.", '{"q1_revenue": 4.0, "q2_revenue": 4.5}'),
        # a year, an id, a phone number: no figure of the thing
        ("Revenue in 2024 was $4.2M.", '{"fiscal_year": "FY2024", "revenue_musd": 4.2}'),
        ("Order 48213's total was $42.50.", '{"order_total": 42.5}'),
        ("Support is at 555-0142.", '{"support_phone": "5550142"}'),
        # a figure set against the thing's own
        ("Revenue was $4.2M, not the $5.1M analysts expected.", '{"revenue_musd": 4.2}'),
        # the figure another source said, with its unit
        ("Northwind's revenue was $5.1M.", "Press: Northwind revenue hit $5.1M in Q3."),
        # another period than the tool's
        ("Northwind's Q2 revenue was $3.9M.", '{"quarter": "Q3", "revenue_musd": 4.2}'),
        ("Q2 2024 revenue was $3.9M.", '{"quarter": "Q3-2024", "revenue_musd": 4.2}'),
    ],
)
def test_a_figure_the_tool_s_figures_make_is_not_contradicted(answer: str, output: Any) -> None:
    assert not found(told(answer, output))


@pytest.mark.parametrize(
    ("output", "gave"),
    [
        ({"revenue_musd": 4.2}, "revenue_musd: 4.2"),  # recorded as a dict
        ('{"data": {"revenue": {"value": 4.2, "unit": "USD m"}}}', "data.revenue.value: 4.2"),
        ('{"revenue_2024_musd": 4.2}', "revenue_2024_musd: 4.2"),
        ('{"totalRevenue": 4.2}', "totalRevenue: 4.2"),
        (
            '[{"quarter": "Q2", "revenue_musd": 4.6}, {"quarter": "Q3", "revenue_musd": 4.2}]',
            "revenue_musd: 4.2",  # the record of the answer's quarter, not the first
        ),
        (
            "| Quarter | Revenue ($M) | Headcount |\n|---|---|---|\n| Q3 | 4.2 | 57 |",
            "Q3 | Revenue ($M): 4.2",
        ),
        ("Northwind reported revenue of $4.2M for the quarter.", "revenue of $4.2M"),
    ],
)
def test_a_tool_s_figure_is_read_with_its_keys_and_cited_whole(output: Any, gave: str) -> None:
    (finding,) = found(told("Northwind's Q3 revenue was approximately $5.1M.", output))
    assert "gives $5.1M for revenue" in finding.message
    assert f"({gave!r})" in finding.metadata["fix"]


@pytest.mark.parametrize(
    "answer",
    [
        "Northwind's revenues were $5.1M.",
        "Northwind made $5.1M in revenue.",
        "Revenue: roughly $5.1M",
    ],
)
def test_an_answer_s_label_is_read_in_the_ways_people_write_it(answer: str) -> None:
    (finding,) = found(told(answer, '{"revenue_musd": 4.2}'))
    assert "for revenue" in finding.message


def test_the_node_that_wrote_the_figure_is_blamed_not_the_one_that_passed_it_on() -> None:
    """A writer's model says "$5.1M"; a formatting node (no model) passes the text on
    as the answer: the writer's call is blamed."""
    meta = {"tool_name": "get_financials"}
    goal = "How did Northwind do last quarter?"
    said = "Northwind's revenue was $5.1M last quarter."
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=goal),
        ev(1, EventType.TOOL_CALL, "researcher", input={"company": "Northwind"}, metadata=meta),
        ev(2, EventType.TOOL_RESULT, "researcher", output='{"revenue_musd": 4.2}', metadata=meta),
        ev(3, EventType.LLM_RESPONSE, "writer", output={"role": "assistant", "content": said}),
        ev(4, EventType.FINAL_ANSWER, "format", output=said + " (unaudited)"),
    ).model_copy(
        update={"goal": goal, "outcome": Outcome(status=OutcomeStatus.FAILURE, reason="wrong")}
    )
    (finding,) = found(run)
    assert finding.metadata["fix"].startswith("At step 3, writer: give revenue as")
    root = diagnose(run).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("writer", 3)


def test_a_deep_result_is_read_to_a_depth_and_no_further() -> None:
    """JSON nested past 32 levels is not walked (a deep payload costs no stack)."""
    deep: Any = {"revenue_musd": 4.2}
    for _ in range(200):
        deep = [{"inner": deep}]
    assert not found(told("Northwind's revenue was $5.1M.", deep))
    assert found(told("Northwind's revenue was $5.1M.", [[{"inner": {"revenue_musd": 4.2}}]]))
