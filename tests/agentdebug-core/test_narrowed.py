"""A step's code that kept part of a collection and left out the item the failure
names is blamed for the selection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
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
        events.insert(4, ev(3, EventType.LLM_RESPONSE, "diff", output={"content": "TR2-43, HK"}))
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


def _failed(*events: AgentEvent, reason: str) -> AgentTrajectory:
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def _node(i: int, agent: str, output: Any, *, given: Any = None) -> list[AgentEvent]:
    start = ev(i, EventType.AGENT_START, agent, input=given).model_copy(update={"id": f"s{i}"})
    return [start, ev(i, EventType.AGENT_END, agent, output=output)]


HOSTS = ["pg-prod-01", "pg-prod-02", "pg-prod-03"]


def test_an_update_a_reducer_merged_into_the_state_is_a_part_not_a_selection() -> None:
    """``{"status": {"pg-prod-01": "patched"}}`` into a dict-merge reducer: the final
    state still holds the other hosts under that key."""
    run = _failed(
        *_node(1, "init", {"status": dict.fromkeys(HOSTS, "pending")}),
        *_node(2, "patch_one", {"status": {"pg-prod-01": "patched"}}),
        ev(3, EventType.FINAL_ANSWER, None,
           output={"status": {"pg-prod-01": "patched", "pg-prod-02": "pending", "pg-prod-03": "pending"}}),
        reason="pg-prod-02 is still pending",
    )  # fmt: skip
    assert found(run) == []


def test_items_a_step_moved_on_or_a_branch_took_are_not_dropped() -> None:
    queue = _failed(
        ev(0, EventType.USER_INPUT, None, input={"pending": HOSTS}),
        *_node(1, "work", {"pending": HOSTS[1:], "done": HOSTS[:1]}),
        *_node(2, "work", {"pending": HOSTS[2:], "done": HOSTS[1:2]}),
        reason="pg-prod-01 was patched twice",
    )
    assert found(queue) == []
    fan_out = _failed(
        ev(0, EventType.USER_INPUT, None, input={"hosts": HOSTS[:2]}),
        *_node(1, "patch", {"out": ["pg-prod-01"]}, given={"host": "pg-prod-01"}),
        *_node(2, "patch", {"out": ["pg-prod-02"]}, given={"host": "pg-prod-02"}),
        reason="pg-prod-02 failed its health check",
    )
    assert found(fan_out) == []


def test_a_tool_s_result_echoed_into_the_messages_is_not_a_use_of_it() -> None:
    """ToolNode writes the tool's JSON into a message: the item is in that update's
    text, not carried on; the diff after it dropped it."""
    counts = json.dumps(WMS)
    run = _failed(
        ev(0, EventType.USER_INPUT, None, input="sync"),
        ev(1, EventType.TOOL_RESULT, "tools", output=counts, metadata={"tool_name": "wms"}),
        *_node(1, "tools", {"messages": [{"role": "tool", "content": counts}]}),
        *_node(2, "diff", {"updates": {"TR2-43": 5, "HK-JKT-M": 9}}),
        reason=SOLD_OUT,
    )
    (finding,) = found(run)
    assert finding.agent_name == "diff"


def test_a_node_whose_subgraph_or_inner_graph_asked_a_model_is_not_plain_code() -> None:
    run = _failed(
        *_node(1, "load", {"skus": ["TR2-44", "TR2-43", "HK-1"]}),
        ev(2, EventType.AGENT_START, "select").model_copy(update={"id": "s2"}),
        ev(3, EventType.LLM_RESPONSE, "select/chooser", output={"content": '["TR2-43"]'}),
        ev(2, EventType.AGENT_END, "select", output={"picked": ["TR2-43", "HK-1"]}),
        reason="TR2-44 was never listed",
    )
    assert found(run) == []


def test_kept_records_are_known_by_the_field_that_named_the_source_s() -> None:
    """One record kept, or two whose versions differ (a field that names them too):
    both are known by the host, as the fleet's records are."""
    versions = ["2.9.12", "2.10.1", "2.9.12", "2.10.5"]
    hosts = [*HOSTS, "pg-prod-04"]
    fleet = [{"version": v, "host": h} for v, h in zip(versions, hosts, strict=True)]
    for kept in ([fleet[1]], [fleet[1], fleet[3]]):
        run = _failed(
            ev(0, EventType.USER_INPUT, None, input="CVE-2024-31877"),
            ev(1, EventType.TOOL_RESULT, "fleet", output=fleet, metadata={"tool_name": "fleet"}),
            *_node(2, "needs_patch", {"targets": kept}),
            reason="pg-prod-01 and pg-prod-03 run a vulnerable version",
        )
        (finding,) = found(run)
        assert finding.metadata["dropped"] == ["pg-prod-01", "pg-prod-03"]


def test_the_source_is_looked_for_by_events_not_by_collections() -> None:
    """250 records (each a mapping of its own fields) are one collection of names."""
    rows = [{"sku": f"SKU-{i}", "qty": 0 if i == 7 else i} for i in range(250)]
    run = _failed(
        ev(0, EventType.USER_INPUT, None, input="sync"),
        ev(1, EventType.TOOL_RESULT, "fetch", output=rows, metadata={"tool_name": "stock"}),
        *_node(2, "diff", {"updates": {r["sku"]: r["qty"] for r in rows if r["qty"]}}),
        reason="SKU-7 still shows stock",
    )
    (finding,) = found(run)
    assert finding.metadata["dropped"] == ["SKU-7"]


@pytest.mark.parametrize(
    ("source", "kept", "reason"),
    [
        (["1", "2", "3"], ["1", "3"], "2 orders were refunded twice"),  # (digits alone)
        (["follow-up", "urgent", "vip"], ["urgent"], "the follow-up email was never answered"),
        (["TR2-44", "tr2-44", "HK-1"], ["TR2-44", "HK-1"], "tr2-44 shows stock"),  # (a case dedup)
        (["v2.9", "v2.10"], ["v2.10"], "v2.9.12 is vulnerable"),  # (another name holds it)
    ],
)
def test_names_that_are_not_identifiers_or_not_the_one_named_are_not_read(
    source: list[str], kept: list[str], reason: str
) -> None:
    run = _failed(
        ev(0, EventType.USER_INPUT, None, input={"items": source}),
        *_node(1, "select", {"kept": kept}),
        reason=reason,
    )
    assert found(run) == []


def _vendors(reason: str, names: list[str], kept: int) -> AgentTrajectory:
    records = [{"vendor": n, "text": f"contract {i}"} for i, n in enumerate(names)]
    return _failed(
        ev(0, EventType.USER_INPUT, None, input={"contracts": records}),
        *_node(1, "plan", {"batches": [records[:kept]]}),
        reason=reason,
    )


def test_a_record_dropped_by_its_name_is_read_when_the_failure_says_it_is_missing() -> None:
    names = ["Acme Cloud", "Cedar Payroll", "Northwind Logistics"]
    (finding,) = found(_vendors("the memo does not flag Northwind Logistics", names, 2))
    assert (finding.agent_name, finding.metadata["dropped"]) == ("plan", ["Northwind Logistics"])


@pytest.mark.parametrize(
    ("reason", "names"),
    [
        ("the page went out without the runbook link that Alice Chen wrote",
         ["Bob Ortiz", "Eve Stone", "Alice Chen"]),  # (not said to be missing)
        ("Booked United though Delta was not cheaper", ["United", "JetBlue", "Delta"]),
        ("the memo does not flag northwind logistics", ["Acme Cloud", "Cedar Payroll",
                                                        "Northwind Logistics"]),
    ],
)  # fmt: skip
def test_record_names_are_read_only_as_a_missing_proper_name(reason: str, names: list[str]) -> None:
    assert found(_vendors(reason, names, 2)) == []
