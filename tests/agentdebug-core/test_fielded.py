"""A step that took a record's value from the field beside the one the failure names
(the preferred name where the passport's was wanted): blamed at that step."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

PROFILE = {
    "employee_id": "E-5521",
    "preferred_name": "Kate Alvarez",
    "legal_name_on_passport": "Katherine M. Alvarez",
    "home_airport": "BOS",
}
REASON = "Kate Alvarez couldn't board: the name on the ticket doesn't match her passport"


def booking(passenger: str, *, reason: str = REASON, profile: Any = None) -> AgentTrajectory:
    """A travel model reads the profile (a tool's JSON text) and books a passenger."""
    result = json.dumps(PROFILE if profile is None else profile)
    args = {"flight": "UA 1187", "passenger_name": passenger}
    return traj(
        ev(0, EventType.USER_INPUT, None, input="Book Kate Alvarez (E-5521) BOS to DEN."),
        ev(1, EventType.TOOL_RESULT, "tools", output=result),
        ev(2, EventType.LLM_RESPONSE, "travel", input=[{"content": result}],
           output={"tool_calls": [{"name": "book_flight", "args": args}]}),
        ev(2, EventType.TOOL_CALL, "travel", input=args, metadata={"tool_name": "book_flight"}),
        ev(3, EventType.TOOL_RESULT, "tools", output={"record": "QX7R2M", "passenger": passenger}),
    ).model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})  # fmt: skip


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "sibling_field_taken"]


def test_the_preferred_name_booked_where_the_passport_s_was_wanted_is_blamed() -> None:
    run = booking("Kate Alvarez")
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("travel", 2)
    assert finding.mode_id == "observation.output_misread"
    assert finding.message == (
        "travel at step 2 wrote 'Kate Alvarez', the record's 'preferred_name' (held at step "
        "1), where the failure names its 'legal_name_on_passport', 'Katherine M. Alvarez', "
        "which no step wrote"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("travel", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, travel: use the record's 'legal_name_on_passport' ('Katherine M. "
        "Alvarez'), not its 'preferred_name' ('Kate Alvarez')."
    )


@pytest.mark.parametrize(
    "run",
    [
        booking("Katherine M. Alvarez"),  # the passport's name
        booking("Kate Alvarez", reason="the flight was delayed by four hours"),  # no field named
        # the failure names both fields' words: which one was wanted is not said
        booking("Kate Alvarez", reason="her preferred name and passport name both on the ticket"),
        # the failure says a key's word in passing and not what was taken
        booking("Kate Alvarez", reason="her passport photo upload kept failing"),
        # two fields of different kinds (no word shared): not siblings
        booking("Kate Alvarez", profile={"preferred_name": "Kate Alvarez",
                                         "passport_number": "X1234567 USA"}),
    ],
)  # fmt: skip
def test_not_a_sibling_field_taken(run: AgentTrajectory) -> None:
    assert found(run) == []
