"""A number a step read out of a text wrongly ("$1,250.00" as 1.0) is blamed on that
step, not on the steps that then worked faithfully on the wrong number."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

LINES = [
    {"id": "EXP-2290", "merchant": "Trattoria Lucca", "amount": "$86.40"},
    {"id": "EXP-2291", "merchant": "Marriott Marquis", "amount": "$1,250.00"},
]
REASON = "paid out at $87.40; the Marriott folio alone was $1,250"


def expenses(parsed: list[float], *, reason: str = REASON, model: bool = False) -> AgentTrajectory:
    """extract (a model) -> parse (code, or a model) -> policy -> submit."""
    items = [{**line, "amount_usd": p} for line, p in zip(LINES, parsed, strict=True)]
    parse = node(2, "parse", {"items": items})
    if model:
        parse.insert(1, ev(2, EventType.LLM_RESPONSE, "parse", output={"content": "parsed"}))
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"receipts": "..."}),
        ev(1, EventType.LLM_RESPONSE, "extract", output={"content": str(LINES)}),
        *node(1, "extract", {"lines": LINES}),
        *parse,
        *node(3, "policy", {"needs_approval": []}),
        *node(4, "submit", {"total_usd": round(sum(parsed), 2)}),
    )
    outcome = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    return run.model_copy(update={"outcome": outcome})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "number_misparsed"]


def test_a_thousands_separator_read_as_the_end_of_the_number_is_blamed() -> None:
    run = expenses([86.4, 1.0])
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("parse", 2)
    assert finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "parse's update at step 2 holds 'amount' '$1,250.00' and, beside it, 'amount_usd' "
        "1.0: the 1,250.00 written there, misread (the digits before its first separator)"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 2, parse: 'amount' '$1,250.00' was read as 'amount_usd' 1.0; read the whole "
        "number (1,250.00)"
    )


def test_the_separator_read_as_a_decimal_point_or_a_model_s_misreading() -> None:
    (finding,) = found(expenses([86.4, 1.25]))
    assert finding.agent_name == "parse"
    (by_model,) = found(expenses([86.4, 1.0], model=True))
    assert by_model.mode_id == "observation.output_misread"
    assert "(a separator read as a decimal point)" in found(expenses([86.4, 1.25]))[0].message
    # the failure naming only the record (its id), not the amount: no telling
    assert found(expenses([86.4, 1.0], reason="EXP-2291 was paid wrong")) == []


def test_right_readings_and_unrelated_failures_are_left_alone() -> None:
    assert found(expenses([86.4, 1250.0])) == []
    assert found(expenses([86.4, 1.0], reason="the report went out late")) == []
    ok = expenses([86.4, 1.0]).model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []
    # a number under a key that shares no word with the text's is not its reading
    other = expenses([86.4, 1250.0])
    other.events[5].output["items"][1]["nights"] = 1
    assert found(other) == []


# -- faults a review found: each a test --------------------------------------------


def test_another_quantity_beside_the_text_is_no_reading_of_it() -> None:
    for key, value in (("amount_k", 1.25), ("amount_tax", 1.25), ("amountQty", 1)):
        run = expenses([86.4, 1250.0])
        run.events[5].output["items"][1][key] = value
        assert found(run) == [], key
    # a record holding the right reading too misread nothing
    run = expenses([86.4, 1.0])
    run.events[5].output["items"][1]["amount_value"] = 1250.0
    assert found(run) == []


def test_the_right_sum_s_own_fault_is_not_hidden_and_huge_ints_are_read() -> None:
    run = expenses([86.4, 1250.0], reason="reimbursed $1,562.50; tax was applied twice")
    run.events[-1].output["total_usd"] = 1562.5
    run.events[5].output["items"][0]["deposit"] = "$1,000.00"
    run.events[5].output["items"][0]["deposit_usd"] = 1.0  # (misread, but not this failure's)
    run.events[5].output["checksum"] = 2**1100
    assert found(run) == []
    assert [f.agent_name for f in RulePack().detect(run) if f.rule_id == "value_made_in_code"] == [
        "submit"
    ]


def test_camel_case_keys_and_a_narrow_no_break_space() -> None:
    run = expenses([86.4, 1.0])
    for item in run.events[5].output["items"]:
        item["amountUsd"] = item.pop("amount_usd")
    assert [f.agent_name for f in found(run)] == ["parse"]
    run = expenses([86.4, 1.0])
    run.events[5].output["items"][1]["amount"] = "1\u202f250,00 €"
    assert [f.agent_name for f in found(run)] == ["parse"]
