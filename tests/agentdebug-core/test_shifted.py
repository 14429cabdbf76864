"""A figure a step wrote with its decimal point moved (12,480.00 as 1,248.00, 0.027 as
0.27 %, 860 ms as 0.86 ms): blamed at the step that wrote it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

NOTE = "Hydro-Quebec electricity, March, per meter read: CAD 12,480.00"
REASON = "the Hydro-Quebec bill came in at 12,480.00 but the books carried 1,248.00"


def failed(*events: AgentEvent, reason: str = REASON) -> AgentTrajectory:
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def accrual(drafted: str, *, reason: str = REASON) -> AgentTrajectory:
    """load (code) -> draft (a model reading the note) -> post (code)."""
    return failed(
        ev(0, EventType.USER_INPUT, None, input={"period": "2024-03"}),
        *node(1, "load", {"notes": [NOTE]}),
        ev(2, EventType.AGENT_START, "draft"),
        ev(2, EventType.LLM_RESPONSE, "draft", input=[{"content": NOTE}],
           output={"content": drafted}),
        ev(2, EventType.AGENT_END, "draft", output={"draft": drafted}),
        *node(3, "post", {"journal": [{"account": "6100", "entry": drafted}]}),
        reason=reason,
    )  # fmt: skip


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "figure_scaled"]


def test_a_model_that_drafted_a_tenth_of_the_amount_it_read_is_blamed() -> None:
    run = accrual('{"vendor": "Hydro-Quebec", "amount": 1248.00}')
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("draft", 2)
    assert finding.mode_id == "observation.output_misread"
    assert finding.message == (
        "draft at step 2: the run held 12,480.00, which the failure names, and it wrote "
        "1248.0: the same digits, its decimal point moved"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("draft", 2)


def test_a_fraction_read_as_a_percentage_is_blamed() -> None:
    rates = '{"services": [{"service": "payments", "error_rate": 0.027}]}'
    run = failed(
        ev(0, EventType.USER_INPUT, None, input="Page for every service over 2% 5xx."),
        ev(1, EventType.TOOL_RESULT, "tools", output=rates),
        ev(2, EventType.LLM_RESPONSE, "agent", input=[{"content": rates}],
           output={"content": "payments is at 0.27%, under the threshold."}),
        reason="payments failed 2.7% of requests and nobody was paged",
    )  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("agent", 2)


def test_a_tool_that_reported_microseconds_as_seconds_under_ms_is_blamed() -> None:
    """The run never held 860: the tool's own conversion wrote 0.86 as ``p95_ms``."""
    run = failed(
        ev(0, EventType.USER_INPUT, None, input="Check the SLOs."),
        ev(1, EventType.TOOL_RESULT, "tools", output='{"service": "checkout", "p95_ms": 0.86}'),
        ev(2, EventType.LLM_RESPONSE, "agent", input="...", output={"content": "All green."}),
        reason="checkout p95 has been around 860 ms against a 500 ms SLO; nobody was paged",
    )  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.mode_id) == ("tools", "reflection.flawed_reasoning")
    assert "which the run never held, and it wrote 0.86 under the same unit" in finding.message


@pytest.mark.parametrize(
    "run",
    [
        accrual('{"vendor": "Hydro-Quebec", "amount": 12480.00}'),  # read right
        # the figure written too (a line's tenth beside it: a split, not a misread)
        accrual('{"amount": 12480.00, "tax_share": 1248.00}'),
        # a two-digit number without a decimal point: too common by chance
        accrual("12 lines", reason="the bill was 1.2 thousand short"),
        accrual('{"amount": 1248.00}').model_copy(
            update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)}
        ),
        # kept in minor units on purpose
        accrual('{"amount_cents": 1248000}', reason="the bill came in at 12,480.00"),
        # a unit slip the run's data does not label as the figure's unit
        failed(
            ev(1, EventType.TOOL_RESULT, "tools", output='{"p95_s": 0.86}'),
            reason="checkout p95 has been around 860 ms",
        ),
    ],
)
def test_not_a_scaled_figure(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_a_figure_made_from_another_or_converted_is_no_slip() -> None:
    """A 10 % tax of a 1,248.00 subtotal (another quantity, under its own key), a p95
    of 860 ms written as 0.86 seconds, and a CPU share of 0.27 and 27 pods beside a
    2.7 % error rate (two digits by chance): none is a decimal point moved (a review
    found each blamed)."""
    taxed = failed(
        *node(1, "load", {"subtotal": 1248.00}),
        *node(2, "compute_tax", {"tax": 124.80}),
        reason="the invoice total of 1,248.00 left out the freight",
    )
    seconds = failed(
        ev(1, EventType.TOOL_RESULT, "tools", output='{"p95_ms": 860}'),
        *node(2, "normalize", {"p95_seconds": 0.86}),
        reason="checkout p95 has been around 860 ms and nobody was paged",
    )
    chance = failed(
        ev(
            1, EventType.TOOL_RESULT, "tools", output='{"service": "payments", "error_rate": 0.027}'
        ),
        ev(2, EventType.TOOL_RESULT, "tools", output='{"cpu": 0.27, "pods": 27.0}'),
        reason="payments failed 2.7% of requests and nobody was paged",
    )
    assert found(taxed) == found(seconds) == found(chance) == []


def test_a_unit_s_factor_alone_is_no_slip() -> None:
    """A correct 2.25 hours beside a reference of "54 hours" (times 24) and a parcel's
    1.2 kg beside "72 kg" (times 60): factors other than ten match by chance (tried
    and taken back: a review found 29 % of random timesheets blamed)."""
    timesheet = failed(
        ev(1, EventType.TOOL_RESULT, "tools", output='{"entries": [{"hours": 2.25}]}'),
        reason="her timesheet should total 54 hours",
    )
    parcel = failed(
        ev(1, EventType.TOOL_RESULT, "tools", output='{"weight_kg": 1.2}'),
        reason="the pallet weighed 72 kg and the courier refused it",
    )
    assert found(timesheet) == found(parcel) == []


def test_a_measurement_under_a_key_with_a_setting_s_letters_is_read() -> None:
    """``retrieval_p95_ms`` holds "retr" and ``downtime_minutes`` "min": words of a
    setting's key are read as words, so these are measurements."""
    run = failed(
        ev(1, EventType.TOOL_RESULT, "tools", output='{"retrieval_p95_ms": 0.86}'),
        reason="retrieval p95 has been around 860 ms",
    )
    (finding,) = found(run)
    assert finding.agent_name == "tools"


def test_a_setting_under_the_figure_s_unit_is_no_slip() -> None:
    """A timeout of 2,500 ms beside a p95 of 250 ms the failure names, and a round
    2,500 under no setting's key: settings, not a measurement slipped."""
    for config in ({"timeout_ms": 2500}, {"p95_ms": 2500}):
        run = failed(
            *node(1, "configure", config),
            *node(2, "probe", {"status": "ok"}),
            reason="p95 latency rose to 250 ms and nobody noticed",
        )
        assert found(run) == []
