"""A step that took one record of a list where the failure names another (a sort in
the wrong order, a namesake contact, a table's wrong row) is blamed, not the steps
that carried the record faithfully."""

from __future__ import annotations

import json
from typing import Any

from agentdebug.detect import RulePack
from agentdebug.detect.pack import RULES
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

BIDS = [
    {"supplier": "Nordmann Guss GmbH", "unit_price": 41.8, "score": 0.921},
    {"supplier": "Kessler Castings", "unit_price": 39.9, "score": 0.547},
    {"supplier": "Bayline Foundry", "unit_price": 43.1, "score": 0.884},
]
AWARD_REASON = (
    "Quality flagged the PO: the award went to Kessler Castings (score 0.547); the "
    "evaluation sheet has Nordmann Guss GmbH on top at 0.921."
)


def failed(run: AgentTrajectory, reason: str) -> AgentTrajectory:
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def sourcing(award: dict[str, Any] = BIDS[1], reason: str = AWARD_REASON) -> AgentTrajectory:
    """fetch (code) -> rank (code: takes one bid) -> draft (a model) -> submit."""
    po = f"PO-66190 to {award['supplier']} at ${award['unit_price']}"
    return failed(
        traj(
            ev(0, EventType.USER_INPUT, None, input={"rfq": "RFQ-0412"}),
            *node(1, "score", {"scored": BIDS}),
            *node(2, "rank", {"award": award}),
            ev(3, EventType.AGENT_START, "draft"),
            ev(
                3,
                EventType.LLM_RESPONSE,
                "draft",
                input=[{"role": "user", "content": json.dumps(award)}],
                output={"role": "assistant", "content": po},
            ),
            ev(3, EventType.AGENT_END, "draft", output={"po": po}),
            *node(4, "submit", {}),
        ),
        reason,
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "wrong_record_picked"]


def test_a_code_step_that_took_the_wrong_record_is_blamed() -> None:
    run = sourcing()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("rank", 2)
    assert finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "The failure names 'Nordmann Guss GmbH', one of 3 records listed at step 1; rank at "
        "step 2 took another, 'Kessler Castings', and no step after it took the record of "
        "'Nordmann Guss GmbH'"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("rank", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, rank: its code took 'Kessler Castings' from the list where 'Nordmann "
        "Guss GmbH' was wanted; check how it chooses (the sort's order, the key it "
        "compares, the match)."
    )


def contacts(picked: str = "C-2213", reason: str | None = None) -> AgentTrajectory:
    """A model searches contacts, is given two namesakes, and sends to one."""
    found_ = [
        {"id": "C-1047", "name": "Jordan Lee", "account": "Acme Corp"},
        {"id": "C-2213", "name": "Jordan Lee", "account": "Acme Freight Ltd"},
    ]
    result = json.dumps(found_)
    send = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "t2",
                "name": "send_quote",
                "args": {"contact_id": picked, "message": "Hi Jordan"},
            }
        ],
    }
    return failed(
        traj(
            ev(0, EventType.USER_INPUT, None, input="Send Q-7781 to Jordan Lee at Acme Corp"),
            ev(1, EventType.TOOL_CALL, "agent", input={"name": "Jordan Lee"}),
            ev(2, EventType.TOOL_RESULT, "tools", output=result),
            ev(
                3,
                EventType.LLM_RESPONSE,
                "agent",
                input=[{"role": "tool", "content": result}],
                output=send,
            ),
            ev(4, EventType.TOOL_RESULT, "tools", output=f"Sent Q-7781 to contact {picked}"),
            ev(
                5, EventType.LLM_RESPONSE, "agent", output={"role": "assistant", "content": "Sent."}
            ),
        ),
        reason or "Jordan Lee at Acme Corp says he never received the quote",
    )


def test_a_model_that_picked_a_namesake_from_a_tool_s_result_is_blamed() -> None:
    (finding,) = found(contacts())
    assert (finding.agent_name, finding.step_index) == ("agent", 3)
    assert finding.mode_id == "observation.output_misread"
    assert finding.message == (
        "The failure names 'Acme Corp', the account of 'C-1047', one of 2 records listed at "
        "step 2; agent at step 3 took another, 'C-2213', and no step after it took the "
        "record of 'C-1047'"
    )
    assert finding.metadata["fix"] == (
        "At step 3, agent: it took the id 'C-2213' of 'C-2213' where the run wanted 'C-1047' "
        "('C-1047'); have it match the record to what was asked before it uses its values."
    )


TABLE = """| jurisdiction | 2025 hourly minimum | effective |
|---|---|---|
| Washington (state) | $16.66 | 2025-01-01 |
| Seattle, WA | $20.76 | 2025-01-01 |
| SeaTac, WA | $20.17 | 2025-01-01 |"""


def wages(reply: str, rate: float = 16.66) -> AgentTrajectory:
    """fetch_table (code) -> read_rate (a model reads the table) -> apply (code)."""
    return failed(
        traj(
            ev(0, EventType.USER_INPUT, None, input={"store": "1520 Pike St, Seattle"}),
            *node(1, "fetch_table", {"table": TABLE}),
            ev(2, EventType.AGENT_START, "read_rate"),
            ev(
                2,
                EventType.LLM_RESPONSE,
                "read_rate",
                input=[{"role": "user", "content": TABLE}],
                output={"role": "assistant", "content": reply},
            ),
            ev(2, EventType.AGENT_END, "read_rate", output={"minimum": reply}),
            *node(3, "apply", {"staff": [{"name": "Abel", "rate": rate}]}),
        ),
        "3 Seattle staff are still paid below $20.76/h (lowest: $16.66)",
    )


def test_a_model_that_copied_another_row_s_figure_is_blamed_at_the_copy() -> None:
    run = wages('{"jurisdiction": "Seattle, WA", "hourly_min": 16.66}')
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("read_rate", 2)
    assert finding.mode_id == "reflection.flawed_reasoning"  # (the table was a node's update)
    assert finding.metadata["value"] == "$16.66"
    assert finding.metadata["wanted"] == "$20.76"
    assert "the 2025 hourly minimum of 'Seattle, WA'" in finding.message
    # the table's step made 16.66 in its own code, rightly: value_made_in_code leaves it
    rules = [f.rule_id for f in RulePack().detect(run)]
    assert "value_made_in_code" not in rules
    root = diagnose(run).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("read_rate", 2)


def test_the_right_pick_a_late_correction_or_no_named_record_is_left_alone() -> None:
    # it took the one the failure names, which went wrong later
    right = sourcing(award=BIDS[0], reason="the PO to Nordmann Guss GmbH has the wrong quantity")
    assert found(right) == []
    right = wages('{"jurisdiction": "Seattle, WA", "hourly_min": 20.76}', 20.76)
    right = failed(right, "Abel's raise to $20.76 was paid a month late")
    assert found(right) == []
    # the failure names only the record taken: nothing says which was wanted
    assert found(sourcing(reason="the award to Kessler Castings was never approved")) == []
    assert found(contacts(reason="the quote never arrived")) == []
    # a step after the pick took the wanted record
    run = contacts()
    run.events.append(
        ev(
            6,
            EventType.LLM_RESPONSE,
            "agent",
            output={
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "t3", "name": "send_quote", "args": {"contact_id": "C-1047"}}
                ],
            },
        ),
    )
    assert found(run) == []
    ok = sourcing().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


def test_a_step_given_one_record_or_a_list_of_messages_is_not_a_pick() -> None:
    # a branch (a Send's) given one bid, which its own code carries on: not a choice
    run = sourcing()
    start = next(
        i
        for i, e in enumerate(run.events)
        if e.type is EventType.AGENT_START and e.agent_name == "rank"
    )
    run.events[start] = run.events[start].model_copy(update={"input": {"bid": BIDS[1]}})
    assert found(run) == []
    # chat messages are not records, however they differ
    chat = [
        {"role": "user", "content": "What is the Nordmann Guss GmbH lead time?"},
        {"role": "assistant", "content": "Kessler Castings ships in 4 weeks."},
    ]
    talk = failed(
        traj(
            ev(0, EventType.USER_INPUT, None, input={"messages": chat}),
            ev(
                1,
                EventType.LLM_RESPONSE,
                "agent",
                input=chat,
                output={"role": "assistant", "content": "Kessler Castings ships in 4 weeks."},
            ),
        ),
        "the user asked about Nordmann Guss GmbH",
    )
    assert found(talk) == []


def test_values_two_records_share_do_not_tell_them_apart() -> None:
    # every bid has the same incoterm and lead time: the failure naming them names none
    same = [{**bid, "incoterm": "DAP Dayton", "weeks": 12} for bid in BIDS]
    run = sourcing(reason="the PO says DAP Dayton and 12 weeks, which nobody agreed to")
    run.events[2] = run.events[2].model_copy(update={"output": {"scored": same}})
    assert found(run) == []


def test_the_wanted_record_s_values_written_by_the_pick_too_are_not_a_pick_in_that_field() -> None:
    # the model wrote Nordmann's name and Kessler's price: the failure names Nordmann,
    # not its price, and the reply holds Nordmann's record too: no pick it can read
    reply = "Nordmann Guss GmbH at $39.9"
    run = failed(
        traj(
            *node(1, "score", {"scored": BIDS}),
            ev(
                2,
                EventType.LLM_RESPONSE,
                "pick",
                input=[{"role": "user", "content": json.dumps(BIDS)}],
                output={"role": "assistant", "content": reply},
            ),
        ),
        "the PO to Nordmann Guss GmbH has the wrong price",
    )
    assert found(run) == []


def test_values_of_the_taken_and_the_wanted_record_are_not_called_lost_later() -> None:
    # the failure quotes the taken bid's score; the draft after the pick did not repeat
    # it: not a value the draft lost, but a value of the record the pick took
    run = sourcing()
    rules = {(f.rule_id, f.agent_name) for f in RulePack().detect(run)}
    assert ("needed_value_lost", "draft") not in rules
    assert ("wrong_record_picked", "rank") in rules


def test_a_large_list_is_read_in_bounded_work() -> None:
    many = [
        {"sku": f"SKU-{i:05d}", "name": f"Part number {i}", "price": 10 + i} for i in range(5_000)
    ]
    events: list[AgentEvent] = [*node(1, "load", {"parts": many})]
    for i in range(2, 300):
        events += node(i, f"step{i}", {"parts": many})
    run = failed(traj(*events), "SKU-00042 was wanted")
    only = RulePack([rule for rule in RULES if rule.id == "wrong_record_picked"])
    assert only.detect(run) == []  # (a list longer than MOST_RECORDS is not read as one)
    # a readable list carried by every step, and lists of their own, until the budget
    # of marks looked for is spent: the rule gives up rather than read on
    for size in (150, 199):
        parts = many[:size]
        events = [*node(1, "load", {"parts": parts})]
        for i in range(2, 300):
            events += node(i, f"step{i}", {"parts": parts, "batch": parts[i % size :][:size]})
        assert only.detect(failed(traj(*events), "SKU-00042 was wanted")) == []


def test_a_step_that_took_a_few_records_and_not_the_one_named_is_blamed() -> None:
    leads = [
        {"company": name, "contact": f"{name.split()[0].lower()}@example.com", "score": score}
        for name, score in (
            ("Kestrel Freight", 91),
            ("Bluefin Dental", 22),
            ("Orbit Analytics", 84),
            ("Pinewood Crafts", 17),
            ("Helix Robotics", 88),
            ("Sunny Side Cafe", 9),
        )
    ]
    top = sorted(leads, key=lambda lead: lead["score"])[:3]  # (ascending: the worst three)
    run = failed(
        traj(
            *node(1, "fetch", {"leads": leads}),
            *node(2, "rank", {"top": top}),
            *node(3, "send", {"sent": [lead["contact"] for lead in top]}),
        ),
        "outreach went to the wrong leads; the best fits are Kestrel Freight and Helix Robotics",
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("rank", 2)
    assert finding.message == (
        "The failure names 'Kestrel Freight', one of 6 records listed at step 1; rank at step "
        "2 took 3 others ('Bluefin Dental', 'Pinewood Crafts' and 'Sunny Side Cafe'), and no "
        "step after it took the record of 'Kestrel Freight'"
    )
    # the step that took the named one among others is not the fault
    fine = [lead for lead in leads if lead["score"] > 80]
    run.events[3] = run.events[3].model_copy(update={"output": {"top": fine}})
    run.events[5] = run.events[5].model_copy(
        update={"output": {"sent": [x["contact"] for x in fine]}}
    )
    assert found(run) == []


# -- faults a review found: each a test --------------------------------------------


def test_a_record_named_by_a_word_of_the_failure_in_another_sense_is_not_named() -> None:
    hotels = [
        {"hotel": "Airport Inn", "rate": 189.0},
        {"hotel": "Central Suites", "rate": 215.0},
    ]
    run = failed(
        traj(*node(1, "search", {"hotels": hotels}), *node(2, "book", {"booked": hotels[1]})),
        "the guest found no shuttle waiting at the airport",
    )
    assert found(run) == []


def test_a_small_number_held_by_chance_is_not_a_record_taken() -> None:
    items = [{"item": "desk lamp", "price": 30}, {"item": "office chair", "price": 245}]
    run = failed(
        traj(
            *node(1, "search", {"items": items}),
            *node(2, "order", {"ordered": "office chair"}),
            *node(3, "policy", {"return_window_days": 30}),
        ),
        "the office chair arrived broken",
    )
    assert found(run) == []


def test_a_step_after_one_that_took_the_wanted_record_is_not_blamed() -> None:
    run = sourcing(award=BIDS[0], reason="Nordmann Guss GmbH got no PO; Kessler Castings did")
    run.events[5:5] = node(5, "notify", {"letter": "Dear Kessler Castings"})
    assert found(run) == []  # (rank took Nordmann: the letter after it is another matter)


def test_steps_that_take_one_record_each_in_turn_are_a_loop_not_a_pick() -> None:
    events = [*node(1, "load", {"bids": BIDS})]
    for n, bid in enumerate(BIDS[1:], start=2):  # (the loop skipped the first bid)
        events += node(n, "notify", {"letter": f"Dear {bid['supplier']}"})
    run = failed(traj(*events), "Nordmann Guss GmbH never got a letter")
    assert found(run) == []


def test_a_number_orjson_cannot_write_costs_no_rule_its_findings() -> None:
    records = [{"name": "alpha", "wei": 25 * 10**18 * 10**3}, {"name": "beta", "wei": 7}]
    run = sourcing()
    run.events.insert(1, ev(0, EventType.TOOL_RESULT, "tools", output={"rows": records}))
    assert [f.agent_name for f in found(run)] == ["rank"]


def test_a_mapping_s_values_of_one_shape_are_not_read_as_records() -> None:
    # a staging and a production config share their fields; the step that took
    # production, as asked, is not blamed for the failure naming staging's host
    envs = {
        "staging": {"host": "stg.db.internal", "pool": 5, "region": "eu-west-1"},
        "production": {"host": "prod.db.internal", "pool": 50, "region": "eu-central-1"},
    }
    run = failed(
        traj(*node(1, "load", {"envs": envs}), *node(2, "select_env", {"env": envs["production"]})),
        "the migration ran against prod.db.internal but the runbook said stg.db.internal first",
    )
    assert found(run) == []


def test_a_step_that_holds_every_record_by_name_carries_the_list_on() -> None:
    lines = [
        {"sku": "OAT-1L-CS", "qty": 12, "unit": 31.2},
        {"sku": "CBR-CAN-CS", "qty": 8, "unit": 44.0},
        {"sku": "CUP-12-SL", "qty": 20, "unit": 6.75},
    ]
    # every sku, the first with its own quantity (a pick of it, by its qty alone)
    picklist = [
        {"sku": r["sku"], "qty": r["qty"] * (1 if i == 0 else 2)} for i, r in enumerate(lines)
    ]
    run = failed(
        traj(*node(1, "load", {"lines": lines}), *node(2, "picklist", {"picklist": picklist})),
        "we ordered 12, 8 and 20 and got twice as many",
    )
    assert found(run) == []


def test_a_field_only_one_record_marks_does_not_make_a_pick_a_carrier() -> None:
    # only Kessler's note tells it apart; the pick that wrote it is still a pick
    noted = [
        {**bid, "note": "late twice in 2025" if i == 1 else "ok"} for i, bid in enumerate(BIDS)
    ]
    run = sourcing(award=noted[1])
    run.events[2] = run.events[2].model_copy(update={"output": {"scored": noted}})
    assert [f.agent_name for f in found(run)] == ["rank"]


def test_a_merge_keyed_by_name_that_kept_one_record_is_the_pick() -> None:
    """A merge writes the offers keyed by vendor (``{"Copier paper": {"OfficeHub":
    3.1}}``) and each later vendor's bid overwrote the earlier's: the merge took
    OfficeHub's record, not the award after it that read the merged offers. Before,
    a mapping's keys were not read, and the award was blamed."""
    quotes = [
        {"vendor": "PaperCo", "item": "Copier paper", "price": 2.45, "valid": "2024-06-30"},
        {"vendor": "TonerDirect", "item": "Toner 59A", "price": 96.0, "valid": "2024-06-15"},
        {"vendor": "OfficeHub", "item": "Copier paper", "price": 3.1, "valid": "2024-07-01"},
    ]
    run = failed(
        traj(
            ev(0, EventType.USER_INPUT, None, input={"rfq": "RFQ-2024-117"}),
            *node(1, "collect_quotes", {"quotes": quotes}),
            *node(2, "merge_offers", {"offers": {"Copier paper": {"OfficeHub": 3.1}}}),
            *node(3, "award_lines", {"awards": [{"vendor": "OfficeHub", "unit": 3.1}]}),
        ),
        "PO-24600 buys copier paper from OfficeHub at $3.10, but PaperCo quoted $2.45",
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("merge_offers", 2)


def test_a_mapping_of_names_to_reasons_or_of_the_rejected_is_no_pick() -> None:
    """A validator's ``{"rejected": {"Bolt": ...}}`` (reasons, or figures under a key
    that says they were left out) took nothing; the award after it did (a review found
    the validator read as a pick of Bolt, and the award then as a loop)."""
    bids = [
        {"vendor": "Acme", "price": 9120.0, "tax_id": "DE811"},
        {"vendor": "Bolt", "price": 8790.0, "tax_id": ""},
        {"vendor": "Crux", "price": 8450.0, "tax_id": "FR402"},
    ]
    for rejected in ({"Bolt": "missing tax id"}, {"Bolt": 2}):  # (2: its count of faults)
        run = failed(
            traj(
                *node(1, "collect_bids", {"bids": bids}),
                *node(2, "validate", {"rejected": rejected}),
                *node(3, "award", {"po": {"vendor": "Acme", "amount": 9120.0}}),
            ),
            "Crux bid lowest (8,450.00) with a valid tax id, but the PO went elsewhere",
        )
        (finding,) = found(run)
        assert (finding.agent_name, finding.step_index) == ("award", 3)


def test_flags_keyed_by_vendor_are_no_pick() -> None:
    bids = [
        {"vendor": "Acme", "price": 9120.0, "tax_id": "DE811"},
        {"vendor": "Bolt", "price": 8790.0, "tax_id": ""},
        {"vendor": "Crux", "price": 8450.0, "tax_id": "FR402"},
    ]
    run = failed(
        traj(
            *node(1, "collect_bids", {"bids": bids}),
            *node(2, "validate", {"flags": {"Bolt": 2}}),
            *node(3, "award", {"po": {"vendor": "Acme", "amount": 9120.0}}),
        ),
        "Crux bid lowest (8,450.00) with a valid tax id, but the PO went elsewhere",
    )
    (finding,) = found(run)
    assert finding.agent_name == "award"
