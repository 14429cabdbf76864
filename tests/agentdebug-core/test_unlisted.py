"""A listing that left out the record the failure names (a tool that never read the
last page) is blamed, not the steps that worked from the listing faithfully."""

from __future__ import annotations

import json
from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

LISTED = [{"invoice": f"INV-24{n:03d}", "amount_due": 100.0 + n} for n in (18, 31, 77, 102)]
REASON = "their AP aging has 5 open items from us; INV-24251 ($8,400) isn't on our statement"


def dunning(listed: Any = LISTED, reason: str = REASON) -> AgentTrajectory:
    """A model asks a tool for the overdue invoices, then sends a statement of them."""
    ids = [row["invoice"] for row in listed] if isinstance(listed, list) else []
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="Send Brightline a statement of everything overdue."),
        ev(1, EventType.LLM_RESPONSE, "agent", output={"role": "assistant", "content": "",
           "tool_calls": [{"id": "l1", "name": "list_overdue", "args": {"customer": "CUS-7"}}]}),
        ev(1, EventType.TOOL_CALL, "agent", input={"customer": "CUS-7"}),
        ev(2, EventType.TOOL_RESULT, "tools", output=json.dumps({"invoices": listed})),
        ev(3, EventType.LLM_RESPONSE, "agent", output={"role": "assistant", "content": "",
           "tool_calls": [{"id": "s1", "name": "send_statement", "args": {"invoice_ids": ids}}]}),
        ev(5, EventType.LLM_RESPONSE, "agent",
           output={"role": "assistant", "content": "Statement sent: everything outstanding."}),
    )  # fmt: skip
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "named_record_unlisted"]


def test_the_listing_that_left_out_the_named_record_is_blamed() -> None:
    run = dunning()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("tools", 2)
    assert finding.mode_id == "observation.poor_retrieval"
    assert finding.message == (
        "'INV-24251', which the failure names, is nowhere in the run; tools at step 2 listed 4 "
        "of its kind ('INV-24018' to 'INV-24102'), the first step to hold any, and not it: "
        "every step after worked from a listing that left it out"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tools", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, tools: it listed 4 of 'INV-24251''s kind and not 'INV-24251'; check how "
        "it gathers them (every page read, a filter's bounds, a limit)."
    )


def test_a_node_s_own_code_that_listed_them_is_blamed_too() -> None:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"customer": "CUS-7"}),
        *node(1, "collect", {"invoices": LISTED}),
        *node(2, "total", {"total": 1234.0}),
    )
    run = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=REASON)})
    assert [(f.agent_name, f.step_index) for f in found(run)] == [("collect", 1)]


def test_a_record_the_run_held_a_list_the_user_gave_or_one_id_is_left_alone() -> None:
    # the run held the named invoice (written another way): another rule's to say who lost it
    held = dunning([*LISTED, {"invoice": "inv 24251", "amount_due": 8400.0}])
    assert found(held) == []
    # the user's own list: the user's
    run = dunning()
    run.events[0] = ev(
        0, EventType.USER_INPUT, None, input=f"Chase {[r['invoice'] for r in LISTED]}"
    )
    assert found(run) == []
    # a model wrote the first ids of the kind: it had them from somewhere the run does not show
    run = dunning()
    run.events[1] = run.events[1].model_copy(
        update={"output": {"role": "assistant", "content": "Chasing INV-24018 and INV-24031."}}
    )
    assert found(run) == []
    assert found(dunning(LISTED[:1])) == []  # (one invoice is not a listing)
    assert found(dunning(reason="the statement was late")) == []  # (nothing named)
    ok = dunning().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


# -- faults a review found: each a test --------------------------------------------


def test_an_id_the_run_was_to_make_a_period_or_one_held_another_way_is_left_alone() -> None:
    assert found(dunning(reason="no ticket was opened: expected the new ticket INV-24251")) == []
    fiscal = [{"invoice": f"FY{y}", "amount_due": 1.0} for y in (2022, 2023, 2024)]
    assert found(dunning(fiscal, reason="the user asked for the FY2025 projection")) == []
    for written in ("invoice #24251", "INV.24251", "inv/24251"):
        run = dunning()
        run.events[0] = ev(0, EventType.USER_INPUT, None, input=f"Chase {written} first")
        assert found(run) == [], written
