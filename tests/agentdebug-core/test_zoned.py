"""A step that relabelled a timestamp with another zone instead of converting it (or
converted with the offset's sign the wrong way): blamed at the step that wrote it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

PUNCHES = [
    {"emp": "E-311", "in": "2024-04-13T14:00:00Z", "out": "2024-04-13T20:00:00Z"},
    {"emp": "E-311", "in": "2024-04-15T00:00:00Z", "out": "2024-04-15T04:30:00Z"},
]
REASON = "Marcus says his Sunday-evening shift was paid like a weekday shift: $54.00 short"


def shifts(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"shifts": [{"emp": "E-311", "start": a, "end": b} for a, b in pairs]}


RELABELLED = shifts(
    ("2024-04-13T14:00:00-05:00", "2024-04-13T20:00:00-05:00"),
    ("2024-04-15T00:00:00-05:00", "2024-04-15T04:30:00-05:00"),
)
CONVERTED = shifts(
    ("2024-04-13T09:00:00-05:00", "2024-04-13T15:00:00-05:00"),
    ("2024-04-14T19:00:00-05:00", "2024-04-14T23:30:00-05:00"),
)
SHIFTED = shifts(  # local = UTC - offset: 14:00Z as 19:00-05:00
    ("2024-04-13T19:00:00-05:00", "2024-04-14T01:00:00-05:00"),
    ("2024-04-15T05:00:00-05:00", "2024-04-15T09:30:00-05:00"),
)


def payroll(
    localized: dict[str, Any],
    *,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    events = [
        ev(0, EventType.USER_INPUT, None, input={"week": "2024-04-08"}),
        *node(1, "load_punches", {"punches": PUNCHES}),
        *node(2, "localize_punches", localized),
        *node(3, "bucket_hours", {"hours": {"E-311": {"weekday": 10.5, "weekend": 6.0}}}),
        *node(4, "pay_summary", {"gross": 528.0}),
    ]
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "time_zone_relabelled"]


def test_utc_punches_relabelled_as_local_time_are_blamed_on_the_node_that_did_it() -> None:
    run = payroll(RELABELLED)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("localize_punches", 2)
    assert finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "localize_punches at step 2 wrote '2024-04-13T14:00:00-05:00' from "
        "'2024-04-13T14:00:00Z' (held at step 1): it kept its clock time and changed its "
        "offset: the same digits, another instant"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("localize_punches", 2)
    assert report.fix is not None and "convert it to the zone (astimezone)" in (
        report.fix.directive
    )


def test_an_offset_applied_the_wrong_way_round_is_blamed() -> None:
    (finding,) = found(payroll(SHIFTED))
    assert finding.agent_name == "localize_punches"
    assert "moved it by its offset the wrong way round" in finding.message


@pytest.mark.parametrize(
    "run",
    [
        payroll(CONVERTED),  # converted right: the same instants
        payroll(RELABELLED, status=OutcomeStatus.SUCCESS),
        payroll(RELABELLED, reason="the PO total was wrong"),  # a failure not about when
        # the same clock time copied with its offset from where it was given
        payroll({"shifts": [{"start": "2024-04-13T14:00:00Z"}]}),
        # a naive time: its zone cannot be told
        payroll(shifts(("2024-04-13T14:00:00", "2024-04-13T20:00:00"))),
    ],
)
def test_not_a_relabelled_time(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_a_step_that_converted_one_time_right_converts() -> None:
    """One shift converted right, another whose clock digits happen to match a UTC
    punch: a step that converts, not one that relabels."""
    mixed = shifts(
        ("2024-04-13T09:00:00-05:00", "2024-04-13T15:00:00-05:00"),
        ("2024-04-15T00:00:00-05:00", "2024-04-15T04:30:00-05:00"),
    )
    assert found(payroll(mixed)) == []


def test_a_model_that_relabelled_two_times_misread_them() -> None:
    """A model given two UTC times that wrote both as Chicago time in its tool call."""
    book = {"tool_name": "book_calls"}
    times = {"first": "2024-05-02T15:00:00-05:00", "second": "2024-05-03T16:30:00-05:00"}
    run = traj(
        ev(0, EventType.USER_INPUT, None,
           input="Book the partner's calls: 2024-05-02T15:00:00Z and 2024-05-03T16:30:00Z."),
        ev(1, EventType.LLM_RESPONSE, "assistant", input="...", output={"tool_calls": [
            {"name": "book_calls", "args": times}]}),
        ev(1, EventType.TOOL_CALL, "assistant", input=times, metadata=book),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="the partner waited: both calls were booked 5 hours late"
    )})  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.mode_id) == ("assistant", "observation.output_misread")


def test_one_time_that_shows_another_zone_s_clock_digits_is_no_relabel() -> None:
    """A calendar's own 15:00 local meeting beside the request's 15:00Z, and a local
    day's midnight beside a UTC trigger's: one time each, by chance, not a step's way
    of converting (a review found both blamed)."""
    calendar = payroll(shifts(("2024-04-13T14:00:00-05:00", "2024-04-13T18:00:00-05:00")))
    assert found(calendar) == []


def test_sentinel_times_and_a_long_week_of_punches_are_read() -> None:
    """Go's zero time and a "never expires" 9999 sentinel beside the punches do not
    stop the rule (an overflow did), nor does a week of 402 punches (it gave up past
    400 timestamps)."""
    week = [{"emp": f"E-{n}", "in": f"2024-04-{8 + n % 7:02d}T14:00:00Z"} for n in range(401)] + [
        {"emp": "E-0", "since": "0001-01-01T00:00:00Z", "until": "9999-12-31T23:59:59Z"}
    ]
    relabelled = shifts(
        ("2024-04-08T14:00:00-05:00", "2024-04-09T14:00:00-05:00"),
        ("0001-01-01T00:00:00+05:30", "9999-12-31T23:59:59-05:00"),
    )
    run = payroll(relabelled)
    events = [e.model_copy(update={"output": {"punches": week}}) if e.id == "e1" else e
              for e in run.events]  # fmt: skip
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.agent_name == "localize_punches"


def test_every_day_s_name_speaks_of_when() -> None:
    for day in ("Tuesday", "Wednesday", "Thursday", "Saturday"):
        reason = f"Marcus says his {day} shift was paid like a weekday shift"
        assert found(payroll(RELABELLED, reason=reason)), day
