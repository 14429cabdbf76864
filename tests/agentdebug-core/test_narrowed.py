"""A step's code that kept part of a collection and left out the item the failure
names is blamed for the selection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

WMS = {"TR2-44": 0, "TR2-43": 5, "HK-JKT-M": 9, "SOCK-3P": 40}
SOLD_OUT = "TR2-44 shows 6 in stock on the storefront but the warehouse has 0"


def stock_sync(
    updates: Any = None, *, reason: str = SOLD_OUT, model: bool = False, as_text: bool = True
) -> AgentTrajectory:
    """fetch (the warehouse's counts, as a tool's JSON text) -> diff (a plain node
    that selects the SKUs to update) -> push (a tool call with them) -> report."""
    updates = {"TR2-43": 5, "HK-JKT-M": 9} if updates is None else updates
    push = {"tool_name": "update_storefront"}
    events = [
        ev(0, EventType.USER_INPUT, None, input={"channel": "shopify-uk"}),
        ev(1, EventType.TOOL_RESULT, "fetch", output=json.dumps(WMS) if as_text else WMS,
           metadata={"tool_name": "wms_counts"}),
        ev(2, EventType.AGENT_END, "fetch", output={"snap": {"wms": WMS}}),
        ev(3, EventType.AGENT_START, "diff").model_copy(update={"id": "s3"}),
        ev(3, EventType.AGENT_END, "diff", output={"updates": updates}),
        ev(4, EventType.TOOL_CALL, "push", input={"updates": updates}, metadata=push),
        ev(5, EventType.LLM_RESPONSE, "report", output={"content": "2 SKUs updated."}),
    ]  # fmt: skip
    if model:
        events.insert(3, ev(3, EventType.LLM_RESPONSE, "diff", output={"content": "TR2-43, HK"}))
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "named_item_filtered_out"]


def test_a_selection_that_left_out_the_named_item_is_blamed() -> None:
    run = stock_sync()
    (finding,) = found(run)
    assert finding.event_id == "e3"
    assert finding.message == (
        "diff kept 2 of the items fetch gave at step 2 ('HK-JKT-M', 'TR2-43') and left out "
        "'TR2-44', which the failure names"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("diff", 3, "memory.context_loss")
    assert report.fix is not None and report.fix.directive == (
        "At step 3, diff: 'TR2-44' was among the items fetch gave and is not in what the "
        "step kept; check the condition that selects them (a 0 or an empty value read as "
        "false, numbers or versions compared as text)."
    )
    assert any(e.quote == "TR2-44" and e.grounded for e in root.evidence)


def test_records_are_known_by_their_first_field_that_names_each() -> None:
    fleet = [
        {"version": "2.9.12", "host": "pg-prod-01"},
        {"version": "2.10.1", "host": "pg-prod-02"},
        {"version": "2.9.12", "host": "pg-prod-04"},
    ]
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"cve": "CVE-2024-31877"}),
        ev(1, EventType.TOOL_RESULT, "fleet", output=fleet, metadata={"tool_name": "get_fleet"}),
        ev(2, EventType.AGENT_START, "needs_patch").model_copy(update={"id": "s2"}),
        ev(2, EventType.AGENT_END, "needs_patch", output={"targets": ["pg-prod-02"]}),
    )
    reason = "pg-prod-01, pg-prod-04 run a vulnerable version and have no upgrade scheduled"
    run = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})
    (finding,) = found(run)
    assert finding.agent_name == "needs_patch"
    assert finding.metadata["dropped"] == ["pg-prod-01", "pg-prod-04"]


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (stock_sync(model=True), "the step asked a model: not its code's selection"),
        (stock_sync(reason="the storefront was updated late"), "the reason names no item"),
        (stock_sync(reason="HK-JKT-M shows 11 on the storefront"), "the named item was kept"),
        (stock_sync(updates={**WMS, "NEW-1": 1}), "not a part: an item was added"),
        (stock_sync(updates=WMS), "all kept"),
        (stock_sync(reason="the warehouse's summary was wrong"), "not an identifier"),
        (stock_sync(reason="TR2-440 was left out"), "another item, whose name holds it"),
        (
            stock_sync().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)}),
            "the run did not fail",
        ),
    ],
)
def test_selections_that_kept_what_the_failure_names_are_not_blamed(
    run: AgentTrajectory, why: str
) -> None:
    assert found(run) == [], why


def test_a_state_update_s_own_keys_are_channels_not_items() -> None:
    """A node that writes one of the state's keys an earlier node wrote several of did
    not drop the others: they stay in the state."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="go"),
        ev(1, EventType.AGENT_END, "load", output={"order_id": "A-1", "ticket_id": "T-9"}),
        ev(2, EventType.AGENT_START, "route").model_copy(update={"id": "s2"}),
        ev(2, EventType.AGENT_END, "route", output={"order_id": "A-1"}),
    )
    reason = "ticket_id T-9 was never answered"
    run = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})
    assert found(run) == []


def test_a_mapping_read_as_an_object_counts_too() -> None:
    (finding,) = found(stock_sync(as_text=False))
    assert finding.event_id == "e3"


def test_an_agent_turn_of_an_imported_transcript_is_not_a_node_s_code() -> None:
    """No node run recorded around the end: an imported log's agent turn, whose
    selection may be a model's."""
    run = stock_sync()
    run.events[:] = [e for e in run.events if e.type is not EventType.AGENT_START]
    assert found(run) == []
