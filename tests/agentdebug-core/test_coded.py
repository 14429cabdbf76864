"""A wrong value the failure names whose first holder is a step that called no model
(a node's own code made it) is blamed on that step."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.detect.coded import _named
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

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
        *node(2, "aggregate", {"overall_pct": 3.83}),
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
        *node(2, "recipients", {"to": to}),
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
        *node(1, "price_cart", {"total": 121.0}),
        ev(2, EventType.LLM_RESPONSE, "confirm", input=[{"role": "user", "content": "121.0"}],
           output={"content": "Thanks for your order!"}),
    )  # fmt: skip
    assert found(failed(run, "the confirmation left out the total, 121.0 EUR")) == []


def test_a_stale_value_used_while_the_wanted_one_was_at_hand_is_the_use_s() -> None:
    """price_cart's total was right; charge chose it over the discounted total a
    later node wrote: the choice is the fault, not the sum."""
    pay = {"tool_name": "charge_card"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"items": [["boots", 95.0], ["socks", 30.0]]}),
        *node(1, "price_cart", {"total": 125.0}),
        *node(2, "apply_coupon", {"discounted_total": 93.75}),
        ev(3, EventType.TOOL_CALL, "charge", input={"amount": 125.0}, metadata=pay),
    )
    assert found(failed(run, "charged [125.0] but the discounted total is 93.75")) == []
    whole = [*run.events[:3], *node(2, "apply_coupon", {"discounted_total": 90.0}), run.events[5]]
    assert found(failed(traj(*whole), "charged [125.0] but the discounted total is 90.0")) == []


def test_of_two_values_made_in_code_the_later_one_is_blamed() -> None:
    mail = {"tool_name": "send"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="weekly"),
        *node(1, "total", {"orders": 21550}),
        ev(2, EventType.TOOL_CALL, "log", input={"orders": 21550}, metadata=mail),
        *node(3, "aggregate", {"pct": 3.83}),
        ev(4, EventType.TOOL_CALL, "note", input={"text": "3.83%"}, metadata=mail),
    )
    (finding,) = found(failed(run, "21,550 orders were logged; the note reports 3.83%"))
    assert (finding.agent_name, finding.step_index) == ("aggregate", 3)


def test_expected_but_got_names_the_second_value_as_the_wrong_one() -> None:
    (finding,) = found(charge_run(reason="expected 128,000 JPY but got 12,800,000 JPY"))
    assert finding.metadata["value"] == "12800000"


def test_a_call_a_model_asked_for_or_one_outside_a_recorded_node_run_is_not_the_code_s() -> None:
    """An imported transcript's tool call (no node run recorded around it), or one filed
    under a model's reply, is the model's decision: its arguments were not code's."""
    pay = {"tool_name": "refund"}
    reason = "refunded 4,520.00 EUR; the order was paid 45.20 EUR"
    bare = traj(
        ev(0, EventType.USER_INPUT, None, input="refund order 7"),
        ev(1, EventType.TOOL_RESULT, "agent", output={"paid": 45.2}, metadata=pay),
        ev(2, EventType.TOOL_CALL, "agent", input={"amount": 4520.0}, metadata=pay),
    )
    assert found(failed(bare, reason)) == []
    asked = traj(
        ev(0, EventType.USER_INPUT, None, input="refund order 7"),
        ev(1, EventType.AGENT_START, "agent"),
        ev(2, EventType.LLM_RESPONSE, "agent", output={"content": ""}),
        ev(3, EventType.TOOL_CALL, "agent", input={"amount": 4520.0}, metadata=pay, parent_id="e2"),
    )
    asked.events[2:] = [e.model_copy(update={"step_index": 1}) for e in asked.events[2:]]
    assert found(failed(asked, reason)) == []


def test_a_call_made_before_the_node_asked_a_model_is_still_the_code_s() -> None:
    run = charge_run()
    after = ev(9, EventType.LLM_RESPONSE, "charge", output={"content": "Charged."})
    run.events.insert(5, after.model_copy(update={"step_index": 3}))
    (finding,) = found(run)
    assert finding.event_id == "e4"


def test_the_final_state_is_not_the_run_s_last_word() -> None:
    """A graph's final state holds every value of the run: a total a node computed
    right and a model then left out was not acted on for being there."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"items": [["boots", 90.5], ["socks", 30.5]]}),
        *node(1, "price_cart", {"total": 121.0}),
        ev(2, EventType.LLM_RESPONSE, "confirm", output={"content": "Thanks for your order!"}),
        ev(3, EventType.FINAL_ANSWER, None, output={"total": 121.0, "message": "Thanks!"}),
    )
    assert found(failed(run, "the confirmation left out the total, 121.0 EUR")) == []


def test_a_value_the_thread_s_earlier_turn_left_in_the_state_is_not_this_run_s() -> None:
    """A run on a checkpointed thread starts from state it did not record: the final
    state's keys that nothing in the run wrote."""
    run = charge_run()
    final = ev(9, EventType.FINAL_ANSWER, None, output={"total": 12800000, "charge": "ok"})
    run.events.append(final)
    assert found(run) == []


@pytest.mark.parametrize(
    "reason",
    [
        "order #12800000 was never confirmed",  # (an id, not an amount)
        "gave up after 12800000 attempts",  # (a count)
    ],
)
def test_bare_integers_are_ids_or_counts_not_amounts(reason: str) -> None:
    assert found(charge_run(reason=reason)) == []


def test_the_reference_answer_s_values_are_the_right_ones() -> None:
    run = charge_run(reason="the charge was wrong")
    run = run.model_copy(update={"reference_answer": "charge 12,800,000 JPY"})
    assert found(run) == []


def test_an_address_built_from_the_name_the_run_was_given_is_computed_not_recalled() -> None:
    mail = {"tool_name": "send_mail"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"name": "Jane Doe"}),
        *node(1, "address", {"to": "jane.doe@acme.example"}),
        ev(2, EventType.TOOL_CALL, "send", input={"to": "jane.doe@acme.example"}, metadata=mail),
    )
    (finding,) = found(failed(run, "mail went to jane.doe@acme.example, who left in May"))
    assert finding.mode_id == "reflection.flawed_reasoning"


def test_a_decimal_is_held_only_by_a_number_that_rounds_to_it() -> None:
    """A tool's 12.57 is not the node's 12.5 (which it would round to 12.6)."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="invoice 7"),
        ev(1, EventType.TOOL_RESULT, "rates", output={"tax": 12.57}, metadata={"tool_name": "t"}),
        *node(2, "calc", {"tax": 12.5}),
        ev(3, EventType.TOOL_CALL, "bill", input={"tax": 12.5}, metadata={"tool_name": "bill"}),
    )
    (finding,) = found(failed(run, "the invoice says 12.5 EUR tax"))
    assert finding.agent_name == "calc"
    held = traj(*run.events[:1], run.events[1].model_copy(update={"output": {"tax": 12.498}}),
                *run.events[2:])  # fmt: skip
    assert found(failed(held, "the invoice says 12.5 EUR tax")) == []


def test_a_node_whose_inner_graph_asked_a_model_did_not_make_the_value_in_code() -> None:
    """A node that invoked a graph of its own, whose model (``charge/decide``, at a
    step of its own) said nothing the run records holding the value."""
    run = charge_run()
    inner = ev(9, EventType.LLM_RESPONSE, "charge/decide", output={"content": "charge it"})
    run.events.insert(4, inner.model_copy(update={"step_index": 4}))
    assert found(run) == []


def test_values_made_together_do_not_hide_each_other() -> None:
    """An aggregate that wrote two regions' totals, both reported: neither is a
    value at hand that the report should have used instead of the other."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"source": "orders.csv"}),
        *node(1, "aggregate", {"totals": {"EMEA": 2050.0, "NA": 2940.0}}),
        ev(2, EventType.LLM_RESPONSE, "report", output={"content": "EMEA $2,050.00, NA $2,940.00"}),
        *node(3, "report", {"report": "EMEA $2,050.00, NA $2,940.00"}),
    )
    reason = "EMEA reported as 2,050.00 but the ledger shows 6,150.00; NA as 2,940.00"
    (finding,) = found(failed(run, reason))
    assert (finding.agent_name, finding.step_index) == ("aggregate", 1)


def test_a_value_the_last_step_s_code_made_is_blamed_there() -> None:
    """The run's last word is the node's own update: the run ended with the value."""
    lines = [
        {"sku": "PAPER-A4-5", "qty": 12, "unit": 23.5},
        {"sku": "TONER", "qty": 3, "unit": 141.0},
    ]
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="12 boxes of paper at 23.50, 3 toners at 141.00"),
        ev(1, EventType.LLM_RESPONSE, "extract", output={"content": "lines"}),
        *node(2, "extract", {"lines": lines}),
        *node(3, "render", {"total": 164.5, "invoice": "12 x paper 23.50; 3 x toner 141.00"}),
    )
    (finding,) = found(failed(run, "invoice total is EUR 164.50; it should be EUR 705.00"))
    assert (finding.agent_name, finding.step_index) == ("render", 3)


def test_a_wanted_value_made_with_the_wrong_one_was_at_hand_when_it_was_used() -> None:
    """One node wrote the total and the discounted total; the charge used the
    first: the choice was wrong, not the node that made both."""
    pay = {"tool_name": "charge_card"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"coupon": "SPRING25"}),
        *node(1, "price_cart", {"total": 125.0, "discounted_total": 93.75}),
        ev(2, EventType.AGENT_START, "charge"),
        ev(3, EventType.TOOL_CALL, "charge", input={"amount": 125.0}, metadata=pay),
    )
    run.events[3:] = [e.model_copy(update={"step_index": 2}) for e in run.events[3:]]
    for reason in ("charged [125.0] but the discounted total is 93.75", "expected 93.75 EUR"):
        assert found(failed(run, f"charged 125.00 EUR; {reason}")) == [], reason


@pytest.mark.parametrize(
    ("reason", "wrong"),
    [
        ("approved at 128,000 JPY but was charged 12,800,000 JPY", ["12800000"]),
        ("expected 128,000 JPY but the gateway shows 12,800,000 JPY", ["12800000"]),
        ("should be 128,000 JPY but is 12,800,000 JPY", ["12800000"]),
        ("charged 125.00 EUR but the discounted total is 93.75", ["125.00"]),
        ("reported as 2,050.00 but the ledger shows 6,150.00", ["2050.00"]),
        ("the refund was fine but the charge was 12,800,000 JPY", ["12800000"]),
        ("while it was processing the gateway recorded 12,800,000 JPY", ["12800000"]),
        ("the total is 203.40 EUR while it should be 743.90 EUR", ["203.40"]),
    ],
)
def test_the_reason_s_wrong_values_are_told_from_the_wanted_ones(
    reason: str, wrong: list[str]
) -> None:
    assert [v.text for v in _named(reason, "") if v.wrong] == wrong


def reminder_run(local: str, shown: str, reason: str) -> AgentTrajectory:
    """load (a plain node) -> to_local (a plain node converting UTC to local time) ->
    compose (a model writing the SMS from the local time)."""
    appt = {"patient": "Gloria Estevez", "start_utc": "2024-11-19T14:30:00Z"}
    events = [
        ev(0, EventType.USER_INPUT, None, input={"run_date": "2024-11-19"}),
        *node(1, "load", {"appointments": [appt]}),
        *node(2, "to_local", {"appointments": [{**appt, "local": local, "display": shown}]}),
        ev(3, EventType.LLM_RESPONSE, "compose", input=[{"role": "user", "content": shown}],
           output={"content": f"Hi Gloria, see you {shown}. Reply C to confirm."}),
    ]  # fmt: skip
    return failed(traj(*events), reason)


def test_a_time_of_day_the_failure_names_is_found_in_any_of_its_forms() -> None:
    """A reminder says 7:30 PM for a 9:30 AM visit: the node that converted 14:30Z to
    local time added the offset's sign the wrong way; the time it wrote, "19:30" and
    "Tuesday at 7:30 PM", is the one the failure quotes in its 12-hour form."""
    reason = "my text says 'Tuesday at 7:30 PM. Reply C' but I booked the visit for 9:30 AM."
    run = reminder_run("2024-11-19 19:30", "Tuesday at 7:30 PM", reason)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("to_local", 2)
    assert finding.message.startswith("'19:30' (the failure's '7:30 PM'), which the failure")
    assert "time zones, an offset's sign" in finding.metadata["fix"]
    root = diagnose(run).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("to_local", 2)
    # the other half of the day, or the wanted time, is not the one it wrote
    assert not found(reminder_run("2024-11-19 07:30", "Tuesday at 7:30 AM", reason))
    wanted = "the visit should be at 7:30 PM, as booked; the text says 9:30 AM"
    assert not found(reminder_run("2024-11-19 19:30", "Tuesday at 7:30 PM", wanted))


def test_a_time_made_from_a_wrong_duration_given_is_not_its_makers() -> None:
    """An exam's end, 10:30, is computed by the scheduler's code from the 120
    minutes a supervisor's task gave it; the failure names both: the time was made
    right from a wrong input, so it is no sign of the scheduler's code."""
    events = [
        ev(0, EventType.USER_INPUT, None, input={"student": "Priya"}),
        *node(1, "records", {"iep": "extended time 1.5x"}),
        *node(2, "supervisor", {"task": {"start": "08:30", "duration_min": 120}}),
        *node(3, "scheduler", {"booking": {"start": "08:30", "end": "10:30"}}),
        ev(4, EventType.LLM_RESPONSE, "mailer", input=[{"role": "user", "content": "10:30"}],
           output={"content": "Priya's exam runs 08:30-10:30."}),
    ]  # fmt: skip
    reason = "her IEP gives time-and-a-half, but the email says 'ends at 10:30' (120 minutes)"
    assert not found(failed(traj(*events), reason))
    # without the duration named, the end time is the scheduler's own
    said = failed(traj(*events), "the email says 'ends at 10:30'")
    assert [f.agent_name for f in found(said)] == ["scheduler"]
    # a number the run holds as no duration (a date's day) is no duration given
    dated = [*events[:3], *node(2, "supervisor", {"day": "2024-11-19", "start": "08:30"}),
             *events[5:]]  # fmt: skip
    named = "the email says 'ends at 10:30'; 19 minutes short"
    assert [f.agent_name for f in found(failed(traj(*dated), named))] == ["scheduler"]
    # a time the failure names only as when something happened is not its subject
    assert not found(failed(traj(*events), "the email, sent at 10:30, has the wrong end"))
