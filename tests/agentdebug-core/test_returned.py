"""A lookup asked for one identifier's record that returned another's (a cache keyed
without the employee) is blamed, not the steps that used the record faithfully."""

from __future__ import annotations

import json
from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

HANA = {"employee_id": "E-1182", "election": 3200.0, "available": 1880.0}
REASON = "Raj was told his $650.00 claim is approved, but his FSA only had $240.00 available"


def claim(account: Any = HANA, asked: Any = "E-2075", reason: str = REASON) -> AgentTrajectory:
    """get_account (a task given its arguments) -> check (code) -> reply (a model)."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"employee_id": "E-2075", "amount": 650.0}),
        ev(1, EventType.AGENT_START, "get_account", input={"employee_id": asked, "plan_year": 2025}),
        ev(1, EventType.AGENT_END, "get_account", output=account),
        ev(2, EventType.AGENT_START, "check", input={"account": account, "amount": 650.0}),
        ev(2, EventType.AGENT_END, "check", output={"approved": True, "remaining": 1230.0}),
        ev(3, EventType.LLM_RESPONSE, "reply",
           output={"role": "assistant", "content": "Your $650.00 claim is approved; $1,230.00 left."}),
    )  # fmt: skip
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "other_record_returned"]


def test_a_lookup_that_returned_another_employee_s_record_is_blamed() -> None:
    run = claim()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("get_account", 1)
    assert finding.mode_id == "observation.poor_retrieval"
    assert finding.message == (
        "get_account at step 1 was asked for employee_id 'E-2075', and its update is the "
        "record of employee_id 'E-1182': another's, which no lookup after it replaced"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("get_account", 1)
    assert report.fix is not None and report.fix.directive == (
        "At step 1, get_account: it returned the record of employee_id 'E-1182' when asked "
        "for 'E-2075'; check its lookup (a cache keyed without the employee_id, a stale "
        "index, a wrong join)."
    )


def test_a_tool_s_result_as_json_text_or_under_one_key_is_read_too() -> None:
    order = json.dumps({"order": {"orderId": 88123, "total": 42.0}})
    run = AgentTrajectory(
        id="t",
        goal="refund",
        events=[
            ev(0, EventType.USER_INPUT, None, input="refund order 88124"),
            ev(1, EventType.TOOL_CALL, "agent", input={"orderId": 88124}),
            ev(2, EventType.TOOL_RESULT, "tools", output=order, parent_id="e1"),
            ev(3, EventType.LLM_RESPONSE, "agent", output={"content": "Refunded $42.00."}),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="order 88124 was never refunded"),
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.metadata["value"]) == (
        "tools",
        2,
        "88123",
    )


def test_the_asked_record_another_way_a_list_or_another_kind_of_id_is_left_alone() -> None:
    assert found(claim({**HANA, "employee_id": "e2075"})) == []  # (the same id written otherwise)
    assert found(claim([HANA, {**HANA, "employee_id": "E-2075"}])) == []  # (a search's list)
    assert found(claim({**HANA, "employee_id": None})) == []
    # a page's cursor, a request's id: not the record's own identifier
    assert found(claim({"cursor_id": "c-2", "items": []}, asked="E-2075")) == []
    paged = claim({"next_page_id": "p-3"})
    paged.events[1] = paged.events[1].model_copy(update={"input": {"next_page_id": "p-2"}})
    assert found(paged) == []
    # a small number is a count, not an identifier
    counted = claim({"id": 3})
    counted.events[1] = counted.events[1].model_copy(update={"input": {"id": 2}})
    assert found(counted) == []
    ok = claim().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


def test_a_lookup_after_it_that_returned_the_asked_record_clears_it() -> None:
    run = claim()
    raj = {"employee_id": "E-2075", "election": 1500.0, "available": 240.0}
    run.events[4:4] = [
        ev(2, EventType.AGENT_START, "get_account", input={"employee_id": "E-2075"}),
        ev(2, EventType.AGENT_END, "get_account", output=raj),
    ]
    assert found(run) == []


# -- faults a review found: each a test --------------------------------------------


def test_the_asked_id_written_with_a_prefix_or_zeros_or_as_a_number_is_the_same() -> None:
    assert found(claim({**HANA, "employee_id": "EMP-2075"})) == []  # (the same digits)
    numbered = claim({"employee_id": 2075, "available": 240.0})
    assert found(numbered) == []
    other = claim({"employee_id": 1182, "available": 1880.0})  # (an int for a text id)
    assert [f.metadata["value"] for f in found(other)] == ["1182"]


def test_a_lookup_whose_name_says_it_returns_another_record_is_left_alone() -> None:
    run = claim({"employee_id": "E-0101", "name": "Dana Ruiz"})
    for i in (1, 2):
        run.events[i] = run.events[i].model_copy(update={"agent_name": "get_manager"})
    assert found(run) == []


def test_a_failure_naming_neither_id_makes_a_weak_finding() -> None:
    (weak,) = found(claim())
    assert weak.confidence == 0.3
    (strong,) = found(claim(reason="E-2075 was told the claim is approved; only $240 left"))
    assert strong.confidence == 0.5
