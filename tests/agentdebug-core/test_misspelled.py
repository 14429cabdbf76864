"""A call that failed on a value misspelled from the task ("Zurick" for the task's
"Zürich"): blamed on the step that first wrote it, with a fix naming the task's
spelling; not the branch that was given it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

GOAL = "Weather tomorrow for my trip: Geneva, Zürich and Bern?"


def planned(city: str, error: str, *, planner_wrote: bool = True) -> AgentTrajectory:
    meta = {"tool_name": "geocode_and_forecast"}
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input=GOAL),
        ev(
            1,
            EventType.LLM_RESPONSE,
            "plan",
            output=f'["Geneva", "{city}", "Bern"]' if planner_wrote else '["Geneva", "Bern"]',
        ),
        ev(2, EventType.TOOL_CALL, "forecast", input={"city": city}, metadata=meta),
        ev(3, EventType.TOOL_RESULT, "forecast", error=error, parent_id="e2", metadata=meta),
        ev(4, EventType.FINAL_ANSWER, "summarize", output="Geneva 18°C; Bern 18°C."),
    ]
    run = traj(*events)
    return run.model_copy(
        update={"goal": GOAL, "outcome": Outcome(status=OutcomeStatus.FAILURE, reason="no Zürich")}
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "argument_misspelled"]


def test_the_planner_that_misspelled_the_task_s_city_is_blamed_with_a_fix() -> None:
    run = planned("Zurick", "LookupError: geocoder: no match for city 'Zurick'")
    (finding,) = found(run)
    assert finding.message == (
        "plan wrote 'Zurick' at step 1 for the task's 'Zürich'; geocode_and_forecast "
        "failed on it at step 3"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "plan",
        1,
        "planning.task_misunderstanding",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 1, plan: write 'Zürich' as the task has it, not 'Zurick', which "
        'geocode_and_forecast could not use at step 3 ("LookupError: geocoder: no match '
        "for city 'Zurick'\")."
    )


def test_a_call_that_misspelled_it_itself_is_blamed() -> None:
    run = planned("Zurick", "geocoder: no match for city 'Zurick'", planner_wrote=False)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("forecast", 2)


@pytest.mark.parametrize(
    ("city", "error"),
    [
        # the task's own word, accents aside: the branch's own fault
        ("Zurich", "UnicodeEncodeError: 'ascii' codec can't encode"),
        ("Zürich", "geocoder: no match for city 'Zürich'"),
        # nothing like a word of the task
        ("Lausanne", "geocoder: no match for city 'Lausanne'"),
        # an error that does not name it
        ("Zurick", "ConnectionError: geocoder unreachable"),
        ("Zurick", "404 Not Found"),
        # (a review's finds) the task's word in another form, or with punctuation
        ("Zürichs", "geocoder: no match for city 'Zürichs'"),
        ("Zürich.", "geocoder: no match for city 'Zürich.'"),
        # a number, a date, an id
        ("2024-05-15", "no forecast for 2024-05-15"),
    ],
)
def test_what_is_not_a_misspelling_the_call_failed_on(city: str, error: str) -> None:
    assert not found(planned(city, error))


def test_a_misspelling_a_tool_gave_and_the_agent_copied_is_not_its_own() -> None:
    run = planned("Zurick", "geocoder: no match for city 'Zurick'")
    events = [
        run.events[0],
        ev(9, EventType.TOOL_RESULT, "plan", output="Places: Geneva, Zurick, Bern").model_copy(
            update={"step_index": 1}
        ),
        *run.events[1:],
    ]
    assert not found(run.model_copy(update={"events": events}))
