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


# -- faults a review found: each a test --------------------------------------------


def test_the_input_passed_on_labels_repeated_or_items_reordered_are_left_alone() -> None:
    # LangGraph's __start__ node passes the input on: not an update that re-adds it
    run = order([PROMO])
    run.events[0] = ev(0, EventType.USER_INPUT, None, input={"lines": LINES})
    run.events.insert(1, ev(0, EventType.AGENT_START, "__start__").model_copy(update={"id": "s0"}))
    run.events.insert(
        2, ev(0, EventType.AGENT_END, "__start__", output={"lines": LINES}, parent_id="s0")
    )
    run.events[4] = run.events[4].model_copy(update={"output": {"order_id": "WO-55120"}})
    assert found(run) == []
    # Send workers' labels repeat by nature
    labels = order(["positive", "negative", "positive"])
    labels.events[2] = labels.events[2].model_copy(
        update={"output": {"lines": ["positive", "negative"]}}
    )
    assert found(labels) == []
    assert found(order([PROMO, *LINES])) == []  # (not the state's list, in its order)


def test_a_subgraph_node_whose_state_holds_the_list_again_is_blamed() -> None:
    run = order([PROMO])
    run.events[3:5] = [
        ev(2, EventType.AGENT_START, "sub").model_copy(update={"id": "s2"}),
        ev(2, EventType.AGENT_START, "sub/promo").model_copy(update={"id": "s2a"}),
        ev(2, EventType.AGENT_END, "sub/promo", output={"lines": [PROMO]}, parent_id="s2a"),
        ev(2, EventType.AGENT_END, "sub", output={"lines": [*LINES, PROMO]}, parent_id="s2"),
    ]
    assert [f.agent_name for f in found(run)] == ["sub"]


def test_an_odd_state_schema_is_read_without_an_error() -> None:
    run = order([*LINES, PROMO])
    run.metadata["state_schema"] = {"keys": ["lines"], "reducers": {"lines": ["add"]}}
    assert found(run) == []
