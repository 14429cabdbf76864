"""A total a step's code added up right from records an earlier step wrongly dropped
is blamed on the step that dropped them, not on the sum."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

ROWS = [
    {"order_id": "SO-1001", "customer": "Acme GmbH", "region": "EMEA", "amount": 1200.0},
    {"order_id": "SO-1002", "customer": "Borealis AB", "region": "EMEA", "amount": 850.0},
    {"order_id": "SO-1003", "customer": "Acme GmbH", "region": "EMEA", "amount": 1840.0},
    {"order_id": "SO-1004", "customer": "Cobalt Inc", "region": "NA", "amount": 2300.0},
    {"order_id": "SO-1006", "customer": "Borealis AB", "region": "EMEA", "amount": 2260.0},
    {"order_id": "SO-1002", "customer": "Borealis AB", "region": "EMEA", "amount": 850.0},
]
# keyed on (customer, region): SO-1003 and SO-1006 (real orders) and the duplicate go
DEDUPED = [ROWS[0], ROWS[1], ROWS[3]]
REASON = "EMEA revenue reported as 2,050.00 but the ledger shows 6,150.00"


def node(i: int, agent: str, output: Any) -> list[AgentEvent]:
    start = ev(i, EventType.AGENT_START, agent).model_copy(update={"id": f"s{i}"})
    return [start, ev(i, EventType.AGENT_END, agent, output=output, parent_id=f"s{i}")]


def failed(run: AgentTrajectory, reason: str, reference: str | None = None) -> AgentTrajectory:
    outcome = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    return run.model_copy(update={"outcome": outcome, "reference_answer": reference})


def etl(*middle: list[AgentEvent], totals: Any = None, reason: str = REASON, **kw: Any) -> Any:
    """extract -> (middle nodes) -> aggregate (a plain sum) -> report (a model)."""
    totals = totals if totals is not None else {"EMEA": 2050.0, "NA": 2300.0}
    last = 10
    said = ", ".join(f"{k} ${v:,.2f}" for k, v in totals.items())
    events = [
        ev(0, EventType.USER_INPUT, None, input={"source": "orders.csv"}),
        *node(1, "extract", {"rows": ROWS}),
        *[e for m in middle for e in m],
        *node(last, "aggregate", {"totals": totals}),
        ev(last + 1, EventType.LLM_RESPONSE, "report", input=[{"role": "user", "content": "sum"}],
           output={"role": "assistant", "content": said}),
    ]  # fmt: skip
    return failed(traj(*events), reason, **kw)


def by(run: AgentTrajectory, rule: str) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == rule]


def test_the_dedupe_that_dropped_real_orders_is_blamed_not_the_faithful_sum() -> None:
    run = etl(node(2, "dedupe", {"clean": DEDUPED}))
    (finding,) = by(run, "total_of_dropped_rows")
    assert (finding.agent_name, finding.step_index) == ("dedupe", 2)
    assert finding.mode_id == "memory.context_loss"
    assert by(run, "value_made_in_code") == []  # (the sum was right for what it was given)
    assert finding.message.startswith(
        "2050.0, which the failure names, is the sum of 'amount' over the EMEA records of "
        "'clean' that aggregate was given at step 10: right for what it was given. dedupe at "
        "step 2 had kept 'clean' from a longer list of the same records (6) and dropped some "
        "of the EMEA records: "
    )
    # the two real orders make up exactly what the total lacks; the duplicate is not named
    assert "SO-1003" in finding.message and "SO-1006" in finding.message
    assert finding.message.count("SO-1002") == 0
    assert finding.message.endswith("add up to 4100.00, what the total lacks of the 6150.00 wanted")
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("dedupe", 2)
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 2, dedupe: its code dropped records the total needed ("
    )
    assert all(e.grounded for e in root.evidence)


def test_a_sort_after_the_dedupe_is_looked_past() -> None:
    ordered = sorted(DEDUPED, key=lambda r: r["amount"])
    run = etl(node(2, "dedupe", {"clean": DEDUPED}), node(3, "sort", {"ordered": ordered}))
    (finding,) = by(run, "total_of_dropped_rows")
    assert (finding.agent_name, finding.step_index) == ("dedupe", 2)


def test_an_earlier_filter_whose_drops_make_up_the_gap_is_blamed_past_a_right_one() -> None:
    # validate dropped the NA row only (not the failure's group); dedupe then the EMEA ones
    valid = [r for r in ROWS if r["region"] == "EMEA"]
    run = etl(node(2, "validate", {"valid": valid}), node(3, "dedupe", {"clean": valid[:2]}))
    (finding,) = by(run, "total_of_dropped_rows")
    assert (finding.agent_name, finding.step_index) == ("dedupe", 3)
    # and when dedupe dropped only the true duplicate, the earlier step that dropped the
    # orders is the one whose drops make up the gap
    wide = [*ROWS, {"order_id": "SO-1009", "customer": "Dune", "region": "EMEA", "amount": 4100.0}]
    picked = [ROWS[0], ROWS[1], ROWS[5]]
    run = etl(
        node(2, "filter", {"picked": picked}),
        node(3, "dedupe", {"clean": picked[:2]}),
    )
    run.events[2].output["rows"] = wide  # (extract's rows: one more EMEA order)
    (finding,) = by(run, "total_of_dropped_rows")
    assert (finding.agent_name, finding.step_index) == ("filter", 2)


def test_the_wanted_figure_may_come_from_the_reference_answer() -> None:
    run = etl(
        node(2, "dedupe", {"clean": DEDUPED}),
        reason="the EMEA figure in the report, 2,050.00, is wrong",
        reference="6,150.00",
    )
    (finding,) = by(run, "total_of_dropped_rows")
    assert finding.agent_name == "dedupe"


def test_a_total_over_all_records_without_a_group() -> None:
    run = etl(
        node(2, "dedupe", {"clean": DEDUPED}),
        totals={"all": 4350.0},
        reason="revenue reported as $4,350.00 but the ledger shows $8,450.00",
    )
    (finding,) = by(run, "total_of_dropped_rows")
    assert finding.agent_name == "dedupe" and "over the records of 'clean'" in finding.message


def test_no_blame_moves_when_the_drops_do_not_make_up_the_gap() -> None:
    # the ledger's figure is not the sum plus any of the dropped orders: the sum (or
    # something else) is wrong, and value_made_in_code keeps the blame on aggregate
    run = etl(
        node(2, "dedupe", {"clean": DEDUPED}),
        reason="EMEA revenue reported as 2,050.00 but the ledger shows 6,000.00",
    )
    assert by(run, "total_of_dropped_rows") == []
    (made,) = by(run, "value_made_in_code")
    assert made.agent_name == "aggregate"


def test_no_blame_moves_when_the_total_is_not_the_sum_of_what_was_given() -> None:
    run = etl(node(2, "dedupe", {"clean": DEDUPED}), totals={"EMEA": 2050.5, "NA": 2300.0},
              reason="EMEA revenue reported as 2,050.50 but the ledger shows 6,150.50")  # fmt: skip
    assert by(run, "total_of_dropped_rows") == []
    assert [f.agent_name for f in by(run, "value_made_in_code")] == ["aggregate"]


def test_no_blame_without_a_wanted_figure_or_a_narrowing() -> None:
    no_wanted = etl(node(2, "dedupe", {"clean": DEDUPED}), reason="EMEA revenue 2,050.00 is low")
    assert by(no_wanted, "total_of_dropped_rows") == []
    # a step that kept every record (a copy) narrowed nothing
    kept_all = etl(node(2, "copy", {"clean": list(ROWS)}), totals={"EMEA": 7000.0},
                   reason="EMEA revenue reported as 7,000.00 but the ledger shows 6,150.00")  # fmt: skip
    assert by(kept_all, "total_of_dropped_rows") == []
    # records changed on the way (not the same records) are not read as dropped
    changed = [dict(r, amount=r["amount"] / 10) for r in DEDUPED]
    run = etl(node(2, "convert", {"clean": changed}), totals={"EMEA": 205.0},
              reason="EMEA revenue reported as 205.00 but the ledger shows 6,150.00")  # fmt: skip
    assert by(run, "total_of_dropped_rows") == []
    assert [f.agent_name for f in by(run, "value_made_in_code")] == ["aggregate"]


def test_a_passing_run_is_left_alone() -> None:
    run = etl(node(2, "dedupe", {"clean": DEDUPED}))
    ok = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert by(ok, "total_of_dropped_rows") == []
