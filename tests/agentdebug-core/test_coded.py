"""A wrong value the failure names whose first holder is a step that called no model
(a node's own code made it) is blamed on that step."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

QUOTE = {"sku": "NITRILE-M-200", "qty": 40, "unit_price": 3200, "currency": "JPY", "total": 128000}
CHARGED = "the gateway recorded charges [('JPY', 12800000)]; finance approved 128,000 JPY"


def failed(run: AgentTrajectory, reason: str) -> AgentTrajectory:
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def charge_run(amount: Any = 12800000, *, reason: str = CHARGED, model: bool = False) -> Any:
    """price (a tool's quote) -> charge (a plain node that calls the gateway) -> receipt
    (a model that writes the receipt from the quote); ``model``: charge asks a model first."""
    pay = {"tool_name": "gateway_charge"}
    events = [
        ev(0, EventType.USER_INPUT, None, input={"sku": "NITRILE-M-200", "qty": 40}),
        ev(1, EventType.TOOL_RESULT, "price", output=QUOTE, metadata={"tool_name": "get_quote"}),
        ev(2, EventType.AGENT_END, "price", output={"quote": QUOTE}),
        ev(3, EventType.AGENT_START, "charge"),
        ev(4, EventType.TOOL_CALL, "charge", input={"amount_minor": amount, "currency": "JPY"},
           metadata=pay),
        ev(5, EventType.TOOL_RESULT, "charge", output="ch_3PZ0001 succeeded", metadata=pay),
        ev(6, EventType.AGENT_END, "charge", output={"charge": "ch_3PZ0001 succeeded"}),
        ev(7, EventType.LLM_RESPONSE, "receipt", input=[{"role": "user", "content": str(QUOTE)}],
           output={"content": "Receipt: 40 x NITRILE-M-200, total 128,000 JPY."}),
    ]  # fmt: skip
    events[3:7] = [e.model_copy(update={"step_index": 3}) for e in events[3:7]]  # charge's step
    if model:
        events.insert(
            4,
            ev(3, EventType.LLM_RESPONSE, "charge", input=[{"role": "user", "content": "Charge."}],
               output={"content": "Charging the approved amount."}),
        )  # fmt: skip
    return failed(traj(*events), reason)


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "value_made_in_code"]


def test_a_plain_node_that_charged_an_amount_nothing_gave_it_is_blamed() -> None:
    run = charge_run()
    (finding,) = found(run)
    assert finding.event_id == "e4" and finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "'12800000', which the failure names, is first held by the arguments of its call "
        "at step 3, a step that called no model and was given nothing holding it: its own "
        "code made it from what it was given (which may itself be wrong)"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "charge",
        3,
        "reflection.flawed_reasoning",
    )
    assert [e.quote for e in root.evidence] == ["12800000"] and root.evidence[0].grounded
    assert report.fix is not None and report.fix.directive == (
        "At step 3, charge: the step's code made '12800000', which the failure names; "
        "check how it computes it from its input (units, rounding, weighting) and whether "
        "that input is right."
    )


def test_an_average_a_node_wrote_that_a_model_then_reported_is_the_node_s() -> None:
    stats = [{"region": "EU", "orders": 12000, "pct": 7.0}, {"region": "LATAM", "pct": 1.0}]
    post = {"tool_name": "post_note"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"week": "2024-W23"}),
        ev(1, EventType.TOOL_RESULT, "stats", output=stats, metadata={"tool_name": "stats"}),
        ev(2, EventType.AGENT_END, "aggregate", output={"overall_pct": 3.83}),
        ev(3, EventType.LLM_RESPONSE, "note", input=[{"role": "user", "content": "3.83"}],
           output={"content": "Refund rate 3.83%, within target."}),
        ev(4, EventType.TOOL_CALL, "note", input={"text": "Refund rate 3.83%"}, metadata=post),
    )  # fmt: skip
    run = failed(run, "1,430 of 21,550 orders were refunded (6.6%); the note reports 3.83%")
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("aggregate", 2)
    assert finding.metadata["value"] == "3.83"
    root = diagnose(run).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("aggregate", 2)


def test_an_address_of_another_run_a_node_added_is_a_wrong_recall() -> None:
    ticket = {"id": "T-5521", "requester": "tom@globex.example"}
    mail = {"tool_name": "send_mail"}
    to = ["jane.doe@acme.example", "tom@globex.example"]
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"ticket_id": "T-5521"}),
        ev(1, EventType.TOOL_RESULT, "load", output=ticket, metadata={"tool_name": "get_ticket"}),
        ev(2, EventType.AGENT_END, "recipients", output={"to": to}),
        ev(3, EventType.TOOL_CALL, "send", input={"to": to}, metadata=mail),
    )
    run = failed(run, "T-5521 was also emailed to ['jane.doe@acme.example'], not on the ticket")
    (finding,) = found(run)
    assert (finding.agent_name, finding.mode_id) == ("recipients", "memory.wrong_recall")
    assert "a mutable default argument" in finding.metadata["fix"]


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (charge_run(model=True), "the step asked a model: its value may be the model's"),
        (charge_run(reason="expected 12800000 JPY to be charged"), "given as wanted"),
        (charge_run(reason="the charge was declined"), "the reason names no value"),
        (charge_run(reason="the receipt should say 128,000 JPY"), "the quote's total: a tool's"),
        (charge_run(reason="charged on 2024-06-11"), "a date is not a figure"),
        (charge_run(reason="pgbouncer 2.9.12 was charged 12 times"), "a version, a count"),
        (
            charge_run().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)}),
            "the run did not fail",
        ),
    ],
)
def test_values_the_run_did_not_make_in_code_are_not_read(run: AgentTrajectory, why: str) -> None:
    assert found(run) == [], why


def test_a_value_a_model_first_said_is_not_the_code_s() -> None:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="convert 250 EUR"),
        ev(1, EventType.LLM_RESPONSE, "parse", output={"content": "amount 271.05"}),
        ev(2, EventType.AGENT_END, "convert", output={"result": 271.05}),
        ev(3, EventType.TOOL_CALL, "pay", input={"amount": 271.05}, metadata={"tool_name": "pay"}),
    )
    assert found(failed(run, "the user was told 271.05 GBP")) == []


def test_a_value_made_in_code_and_never_used_is_not_blamed() -> None:
    """A total a node computed right, which a later model left out: that step lost it
    (another rule's), the node that made it did nothing wrong."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"items": [["boots", 90.5], ["socks", 30.5]]}),
        ev(1, EventType.AGENT_END, "price_cart", output={"total": 121.0}),
        ev(2, EventType.LLM_RESPONSE, "confirm", input=[{"role": "user", "content": "121.0"}],
           output={"content": "Thanks for your order!"}),
    )  # fmt: skip
    assert found(failed(run, "the confirmation does not give the total, 121.0 EUR")) == []


def test_a_stale_value_used_while_the_wanted_one_was_at_hand_is_the_use_s() -> None:
    """price_cart's total was right; charge chose it over the discounted total a
    later node wrote: the choice is the fault, not the sum."""
    pay = {"tool_name": "charge_card"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"items": [["boots", 95.0], ["socks", 30.0]]}),
        ev(1, EventType.AGENT_END, "price_cart", output={"total": 125.0}),
        ev(2, EventType.AGENT_END, "apply_coupon", output={"discounted_total": 93.75}),
        ev(3, EventType.TOOL_CALL, "charge", input={"amount": 125.0}, metadata=pay),
    )
    assert found(failed(run, "charged [125.0] but the discounted total is 93.75")) == []


def test_of_two_values_made_in_code_the_later_one_is_blamed() -> None:
    mail = {"tool_name": "send"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="weekly"),
        ev(1, EventType.AGENT_END, "total", output={"orders": 21550}),
        ev(2, EventType.TOOL_CALL, "log", input={"orders": 21550}, metadata=mail),
        ev(3, EventType.AGENT_END, "aggregate", output={"pct": 3.83}),
        ev(4, EventType.TOOL_CALL, "note", input={"text": "3.83%"}, metadata=mail),
    )
    (finding,) = found(failed(run, "21,550 orders were logged; the note reports 3.83%"))
    assert (finding.agent_name, finding.step_index) == ("aggregate", 3)
