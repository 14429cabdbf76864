"""A node's update that gave an appending reducer the items the state held (the
whole list returned to an ``operator.add`` key) is blamed, not the steps that
faithfully used the doubled list."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.detect.signals import STATE_SCHEMA
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

LINES = [{"sku": "OAT-1L-CS", "qty": 12}, {"sku": "CBR-CAN-CS", "qty": 8}]
PROMO = {"sku": "TMB-LOGO", "qty": 1}
REASON = "the truck dropped 24 cases of oat milk and 16 of cold brew; we ordered 12 and 8"


def order(update: list[Any], reducer: str = "add", reason: str = REASON) -> AgentTrajectory:
    """load (writes the lines) -> promos (writes ``update`` to lines) -> picklist."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"order_id": "WO-55120"}),
        *node(1, "load_order", {"lines": LINES}),
        *node(2, "apply_promos", {"lines": update}),
        *node(3, "picklist", {"picklist": [{"sku": "OAT-1L-CS", "qty": 24}]}),
    )
    schema = {"keys": ["order_id", "lines", "picklist"], "reducers": {"lines": reducer}}
    return run.model_copy(
        update={
            "metadata": {STATE_SCHEMA: schema},
            "outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason),
        }
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "update_readded"]


def test_an_update_that_gave_an_appending_key_its_items_again_is_blamed() -> None:
    run = order([*LINES, PROMO])
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("apply_promos", 2)
    assert finding.message == (
        "apply_promos at step 2 wrote 3 items under 'lines', among them all 2 the state "
        "held there; 'lines' is merged by appending, so the state holds those twice after it"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("apply_promos", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, apply_promos: return only the new items under 'lines'; its reducer "
        "appends the update to what the state holds, so the 2 it held are now there twice."
    )


def test_new_items_only_a_replacing_key_or_a_command_s_update_read_right() -> None:
    assert found(order([PROMO])) == []  # (only the new item: right)
    assert found(order([*LINES, PROMO], reducer="merge_lines")) == []  # (not appending)
    assert found(order([LINES[0], PROMO])) == []  # (one of the two: not the state's list)
    run = order([])
    run.events[4] = run.events[4].model_copy(
        update={"output": {"command": True, "update": {"lines": [*LINES, PROMO]}}}
    )
    assert [f.agent_name for f in found(run)] == ["apply_promos"]
    ok = order([*LINES, PROMO]).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)}
    )
    assert found(ok) == []
