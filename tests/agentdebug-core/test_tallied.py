"""A total a step's code added up right from records an earlier step wrongly dropped
is blamed on the step that dropped them, not on the sum."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RULES, RulePack
from agentdebug.detect.rules import Rule
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

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
        "step 2 had kept 'clean' from a longer list of the same records (6) and dropped the "
        "EMEA records: "
    )
    # the two real orders make up exactly what the total lacks; the duplicate is not named
    assert "SO-1003" in finding.message and "SO-1006" in finding.message
    assert finding.message.count("SO-1002") == 0
    assert finding.message.endswith(
        "add up to 4100.00, the difference between the total and the 6150.00 wanted"
    )
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
    # and when dedupe dropped only a true duplicate (a copy of a record it kept), the
    # earlier step that dropped the order is the one whose drops make up the gap
    late = {"order_id": "SO-1009", "customer": "Dune", "region": "EMEA", "amount": 4100.0}
    picked = [r for r in ROWS if r["region"] == "EMEA"]
    run = etl(
        node(2, "filter", {"picked": picked}),
        node(3, "dedupe", {"clean": picked[:-1]}),
        totals={"EMEA": 6150.0},
        reason="EMEA revenue reported as 6,150.00 but the ledger shows 10,250.00",
    )
    run.events[2].output["rows"] = [*ROWS, late]  # (extract's rows: one more EMEA order)
    (finding,) = by(run, "total_of_dropped_rows")
    assert (finding.agent_name, finding.step_index) == ("filter", 2)
    assert "SO-1009" in finding.message and "had kept 'picked'" in finding.message


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


# -- faults a review found: each a test --------------------------------------------


def test_a_filter_that_kept_ten_of_three_thousand_records_is_read_at_once() -> None:
    rows = [{"order_id": f"o{i:05d}", "region": "EMEA", "amount": 49.0} for i in range(3000)]
    run = etl(node(2, "filter_paid", {"paid": rows[:10]}), totals={"EMEA": 490.0},
              reason="EMEA revenue reported as 490.00 but the ledger shows 147,000.00")  # fmt: skip
    run.events[2].output["rows"] = rows
    (finding,) = by(run, "total_of_dropped_rows")
    assert finding.agent_name == "filter_paid" and "and 2987 more" in finding.message


def test_drops_that_only_partly_make_up_the_gap_or_true_duplicates_move_no_blame() -> None:
    # a dedupe on order_id that dropped only a page fetched twice (an exact copy)
    right = etl(node(2, "dedupe", {"clean": ROWS[:5]}), totals={"EMEA": 6150.0},
                reason="EMEA revenue reported as 6,150.00 but the ledger shows 7,000.00")  # fmt: skip
    assert by(right, "total_of_dropped_rows") == []
    # five dropped records of which two happen to add up to the gap: not all of them
    rows = [{"id": f"r{i}", "region": "EMEA", "amount": 50.0 * (i + 1)} for i in range(8)]
    run = etl(node(2, "filter", {"kept": rows[:3]}), totals={"EMEA": 300.0},
              reason="EMEA revenue reported as 300.00 but the ledger shows 750.00")  # fmt: skip
    run.events[2].output["rows"] = rows
    assert by(run, "total_of_dropped_rows") == []


def test_the_sum_s_own_fault_on_another_figure_is_still_blamed_on_it() -> None:
    run = etl(
        node(2, "dedupe", {"clean": DEDUPED}),
        totals={"NA": 2530.0, "EMEA": 2050.0},  # (aggregate marked NA up by 10 %)
        reason="NA revenue reported as 2,530.00 but the ledger shows 2,300.00; "
        "EMEA revenue reported as 2,050.00 but the ledger shows 6,150.00",
    )
    assert [f.agent_name for f in by(run, "total_of_dropped_rows")] == ["dedupe"]
    assert [f.agent_name for f in by(run, "value_made_in_code")] == ["aggregate"]


def test_odd_payloads_are_read_and_a_rule_that_fails_costs_only_its_own_findings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for odd in (float("nan"), float("inf"), -float("inf"), 2**70):
        rows = [*ROWS, {"order_id": "SO-9", "region": "APAC", "amount": odd}]
        run = etl(node(2, "dedupe", {"clean": DEDUPED, 7: "x"}), totals={"EMEA": 2050.0, 1: 2})
        run.events[2].output["rows"] = rows
        assert [f.agent_name for f in by(run, "total_of_dropped_rows")] == ["dedupe"]

    def broken(ctx: Any) -> Any:
        raise ValueError("an odd payload")

    rules = [Rule("broken", "raises", broken), *RULES]
    run = etl(node(2, "dedupe", {"clean": DEDUPED}))
    found = [f.rule_id for f in RulePack(rules).detect(run)]
    assert "total_of_dropped_rows" in found
    assert "rule broken failed on run t; the other rules' findings stand" in caplog.text


def test_after_a_sort_the_message_names_the_key_the_dropper_wrote() -> None:
    ordered = sorted(DEDUPED, key=lambda r: r["amount"])
    run = etl(node(2, "dedupe", {"clean": DEDUPED}), node(3, "order", {"rows": ordered}))
    (finding,) = by(run, "total_of_dropped_rows")
    assert "dedupe at step 2 had kept 'clean' from" in finding.message
    root = diagnose(run).root_cause
    assert root is not None and root.evidence[0].step_index == 2 and root.evidence[0].grounded


def test_a_key_a_reducer_merges_is_not_read_as_what_a_step_was_given() -> None:
    # Send branches' parts of `clean` (operator.add): the latest part is not the list
    run = etl(node(2, "dedupe", {"clean": DEDUPED}))
    schema = {"keys": ["rows", "clean", "totals"], "reducers": {"clean": "add"}}
    run = run.model_copy(update={"metadata": {"state_schema": schema}})
    assert by(run, "total_of_dropped_rows") == []


def test_amounts_as_text_a_null_amount_a_group_of_two_words_and_the_next_clause() -> None:
    def texts(r: dict[str, Any]) -> dict[str, Any]:
        amount = r["amount"]
        written = f"Decimal('{amount:.2f}')" if r["order_id"] < "SO-1003" else f"${amount:,.2f}"
        return {**r, "region": "North America" if r["region"] == "NA" else r["region"],
                "amount": written}  # fmt: skip

    rows = [texts(r) for r in ROWS] + [{"order_id": "SO-1", "region": "LATAM", "amount": None}]
    kept = [rows[0], rows[1], rows[3]]
    run = etl(node(2, "dedupe", {"clean": kept}), totals={"EMEA": 2050.0},
              reason="EMEA revenue is wrong (2,050.00); the ledger shows 6,150.00")  # fmt: skip
    run.events[2].output["rows"] = rows
    (finding,) = by(run, "total_of_dropped_rows")
    assert finding.agent_name == "dedupe"
    na = [
        {"order_id": "SO-1004", "region": "North America", "amount": 2300.0},
        {"order_id": "SO-1011", "region": "North America", "amount": 100.0},
        {"order_id": "SO-1010", "region": "North America", "amount": 50.0},
    ]
    group = etl(node(2, "dedupe", {"clean": na[:2]}), totals={"North America": 2400.0},
                reason="North America revenue reported as 2,400.00 but the ledger shows "
                "2,450.00")  # fmt: skip
    group.events[2].output["rows"] = na
    (finding,) = by(group, "total_of_dropped_rows")
    assert "over the North America records" in finding.message
