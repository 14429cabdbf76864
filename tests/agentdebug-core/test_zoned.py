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


def test_a_model_that_relabelled_a_time_misread_it() -> None:
    """A model given a UTC time that wrote it as Chicago time in its tool call."""
    book = {"tool_name": "book_call"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="Book the partner's 2024-05-02T15:00:00Z call."),
        ev(1, EventType.LLM_RESPONSE, "assistant", input="...", output={"tool_calls": [
            {"name": "book_call", "args": {"at": "2024-05-02T15:00:00-05:00"}}]}),
        ev(1, EventType.TOOL_CALL, "assistant", input={"at": "2024-05-02T15:00:00-05:00"},
           metadata=book),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="the partner waited: the call was booked 5 hours late"
    )})  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.mode_id) == ("assistant", "observation.output_misread")
