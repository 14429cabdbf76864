"""A lookup whose list of records the model passed on whole, the failure naming
records of it (a tool's filter that let in customers of another feeder), is blamed,
not the model's turn that acted on every record it was given."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev

CUSTOMERS = [
    {"customer_id": "C-500113", "name": "Oak Hollow Vet Clinic", "street": "Oak Hollow Rd"},
    {"customer_id": "C-500127", "name": "R. & J. Castillo", "street": "Oak Hollow Rd"},
    {"customer_id": "C-611019", "name": "Devon Marsh", "street": "Maple Ridge Rd"},
    {"customer_id": "C-611044", "name": "Maple Ridge Dialysis Center", "street": "Maple Ridge Rd"},
]
REASON = (
    "2 customers whose power is not being touched were told it will be off on Tuesday "
    "(Devon Marsh, Maple Ridge Dialysis Center); the clinic is rescheduling patients."
)
GOAL = "Notify every customer affected by work order WO-18804 of the planned outage."


def outage(
    listed: list[dict[str, Any]] = CUSTOMERS,
    notified: list[str] | None = None,
    reason: str = REASON,
    goal: str = GOAL,
    **given: Any,
) -> AgentTrajectory:
    """A model looks up the feeder's customers, then queues a notice for each
    (``given``: what else it gives the notice call)."""
    ids = [c["customer_id"] for c in listed] if notified is None else notified
    asked = {"role": "assistant", "content": ""}
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input=goal),
        ev(1, EventType.LLM_RESPONSE, "planner", output={**asked, "tool_calls": [
            {"id": "c1", "name": "list_affected_customers", "args": {"feeder_id": "F12"}}]}),
        ev(1, EventType.TOOL_CALL, "planner", input={"feeder_id": "F12"},
           metadata={"tool_name": "list_affected_customers", "tool_call_id": "c1"}),
        ev(2, EventType.TOOL_RESULT, "tools", output=json.dumps({"customers": listed}),
           metadata={"tool_name": "list_affected_customers", "tool_call_id": "c1"}),
        ev(3, EventType.LLM_RESPONSE, "planner", output={**asked, "tool_calls": [
            {"id": "c2", "name": "queue_notices", "args": {"customer_ids": ids, **given}}]}),
        ev(3, EventType.TOOL_CALL, "planner", input={"customer_ids": ids, **given},
           metadata={"tool_name": "queue_notices", "tool_call_id": "c2"}),
        ev(4, EventType.TOOL_RESULT, "tools", output='{"status": "queued"}',
           metadata={"tool_name": "queue_notices", "tool_call_id": "c2"}),
        ev(5, EventType.LLM_RESPONSE, "planner",
           output={"role": "assistant", "content": "Notices queued for everyone on F12."}),
    ]  # fmt: skip
    events = [e.model_copy(update={"id": f"x{n}"}) for n, e in enumerate(events)]
    return AgentTrajectory(
        id="t",
        goal=goal,
        events=events,
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason=reason),
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "listed_records_relayed"]


def test_the_lookup_whose_whole_list_was_acted_on_is_blamed() -> None:
    run = outage()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("tools", 2)
    assert finding.mode_id == "observation.poor_retrieval"
    assert finding.message == (
        "'Devon Marsh', 'Maple Ridge Dialysis Center', which the failure names, came from the "
        "result of list_affected_customers at step 2: a list of 4 records passed on whole to "
        "queue_notices at step 3, none of them chosen over another; what the failure names "
        "came from the lookup as it was"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tools", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, tools: list_affected_customers returned 'Devon Marsh', 'Maple Ridge "
        "Dialysis Center' among its 4 records, and every record it returned was acted on; "
        "check how it selects them and what it returns for them (its filter, the fields it "
        "matches on or computes, its data)."
    )


def test_a_model_that_chose_among_the_records_is_not_the_lookup_s_fault() -> None:
    # it notified three of four, the named ones among them: a choice, the model's
    chose = outage(notified=["C-500113", "C-611019", "C-611044"])
    assert found(chose) == []
    assert found(outage(CUSTOMERS[:1])) == []  # (one record is not a list to choose from)


def test_records_the_failure_wants_the_goal_gives_or_share_with_others_are_left_alone() -> None:
    # the failure names them as the ones that should have been notified
    wanted = "only Devon Marsh and Maple Ridge Dialysis Center should have been told"
    assert found(outage(reason=wanted)) == []
    # the user named them: the lookup returned what it was asked about
    assert found(outage(goal=f"{GOAL} Devon Marsh and Maple Ridge Dialysis Center too.")) == []
    # a value the records share (their street) tells none of them apart
    street = "everyone on Maple Ridge Rd got a notice for an outage that is not theirs"
    assert found(outage(reason=street)) == []
    ok = outage().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


# -- faults a review found: each a test --------------------------------------------


def test_the_model_s_own_part_is_left_to_it() -> None:
    """The rule fired where the model was at fault, and took the blame from it."""
    # the records said which to leave out ("status": "cancelled"), the goal which to
    # take ("every ACTIVE customer"): the model mailed all
    marked = [{**c, "status": "cancelled" if "Ma" in c["street"] else "active"} for c in CUSTOMERS]
    assert found(outage(marked, goal="Notify every ACTIVE customer of the outage.")) == []
    # a value the model gave every record, which the failure names (one record's
    # window for all, a misspelt passenger, the channel)
    assert found(outage(window="Tue 9-12", reason=f"{REASON} It said Tue 9-12.")) == []
    assert found(outage(channel="sms", reason=REASON.replace("were told", "got an SMS"))) == []
    # the failure says something did not happen to them: not that they were taken
    assert found(outage(reason="Devon Marsh never got the notice: the gateway refused it.")) == []


def test_a_choice_after_all_were_looked_at_is_the_model_s() -> None:
    """Prices looked up for every record, then one booked: the model chose."""
    run = outage(reason="Devon Marsh was booked; Oak Hollow Vet Clinic was cheaper.")
    chosen = run.events[-1].model_copy(
        update={"id": "x99", "step_index": 6, "type": EventType.TOOL_CALL,
                "input": {"customer_id": "C-611019"}, "output": None,
                "metadata": {"tool_name": "book", "tool_call_id": "c3"}}
    )  # fmt: skip
    run.events.insert(len(run.events) - 1, chosen)
    assert found(run) == []


@pytest.mark.parametrize(
    "reason",
    [
        "Notices should never have gone to Devon Marsh: that customer is on F121.",
        "We notified not only F12's customers but also Devon Marsh, who is on F121.",
        "Devon Marsh got a notice; its power is not being touched.",
    ],
)
def test_the_intended_case_in_other_words(reason: str) -> None:
    (finding,) = found(outage(reason=reason))
    assert (finding.agent_name, finding.step_index) == ("tools", 2)


def test_records_passed_on_by_name_count_too() -> None:
    names = [c["name"] for c in CUSTOMERS]
    (finding,) = found(outage(notified=names))
    assert finding.metadata["value"] == "Devon Marsh"
