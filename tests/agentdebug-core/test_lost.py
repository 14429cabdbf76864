"""A value the failure says was wanted (a budget, a total, an id), given to a step
that wrote nothing holding it: blamed on that step, not on the answer that came
out without it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

ASK = "Hotels in Lisbon for 2 nights, max 120 EUR per night."
PLAN = '[{"city": "Lisbon", "nights": 2, "max_price_eur": null, "cancel": "free"}]'
REPLY = "Here is your trip: 2 nights at Memmo Alfama in Lisbon, 245 EUR a night."


def trip(
    plan: str = PLAN,
    reply: str = REPLY,
    *,
    reason: str | None = "a hotel over the 120 EUR/night budget was chosen",
    status: OutcomeStatus = OutcomeStatus.FAILURE,
    route: str | None = None,
) -> AgentTrajectory:
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input={"request": ASK})]
    if route is not None:  # a router's label: not expected to carry the budget
        events.append(ev(1, EventType.LLM_RESPONSE, "router", input=ASK, output=route))
    n = len(events)
    events += [
        ev(n, EventType.LLM_RESPONSE, "plan", input=[{"content": f"Plan: {ASK}"}], output=plan),
        ev(n + 1, EventType.AGENT_END, "plan", output={"tasks": plan}),
        ev(n + 2, EventType.TOOL_RESULT, "search", output='[{"name": "Memmo", "price": 245}]'),
        ev(
            n + 3,
            EventType.LLM_RESPONSE,
            "compose",
            input=[{"content": f"{ASK} {plan}"}],
            output={"content": reply},
        ),
        ev(n + 4, EventType.FINAL_ANSWER, None, output={"request": ASK, "itinerary": reply}),
    ]
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "needed_value_lost"]


def test_the_first_model_given_the_wanted_value_that_dropped_it_is_blamed() -> None:
    run = trip(route="search")
    (finding,) = found(run)
    assert finding.message == (
        "'120', which the failure says was wanted, was last held by its prompt at its own "
        "call; plan went on without it"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("plan", 2, "memory.context_loss")
    assert report.fix is not None and report.fix.directive == (
        "At step 2, plan: carry '120' forward (it was given it, at step 2, and wrote nothing "
        "that holds it); the run needed it."
    )


def test_a_value_a_code_node_dropped_is_blamed_on_the_node_after_its_last_holder() -> None:
    """No model was given it: the first step after the last that held it."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"package": "left-pad-ng 2.1.0"}),
        ev(1, EventType.AGENT_END, "sec_scan", output={"issues": ["CVE-2024-38371 critical"]}),
        ev(2, EventType.AGENT_END, "license_scan", output={"issues": []}),
        ev(3, EventType.AGENT_END, "merge", output={"issues": [], "verdict": "approved"}),
        ev(4, EventType.AGENT_END, "report", output={"text": "left-pad-ng 2.1.0: approved"}),
    ).model_copy(
        update={
            "outcome": Outcome(
                status=OutcomeStatus.FAILURE, reason="critical CVE-2024-38371 but approved"
            )
        }
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("license_scan", 2)


def test_a_total_written_with_groups_and_decimals_is_the_same_value() -> None:
    quote = "Delivery 1,850.00 USD. TOTAL DUE: 43,914.00 USD."
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="all-in cost of 40 chairs?"),
        ev(1, EventType.TOOL_RESULT, "fetch", output=quote),
        ev(
            2,
            EventType.LLM_RESPONSE,
            "summarize",
            input=[{"content": quote}],
            output="Q-311: 40 chairs, 12% discount, total 42,064.00 USD, valid 30 days.",
        ),
        ev(3, EventType.LLM_RESPONSE, "reply", input="...", output="It costs 42,064 USD in all."),
    ).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="real total is 43914")}
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("summarize", 2)


@pytest.mark.parametrize(
    "run",
    [
        # carried to the end: the last reply holds it
        trip(reply="Memmo Alfama is over your 120 EUR budget; here is one under it."),
        # the value is nowhere in the run (the check computed it)
        trip(reason="the budget was 135 EUR/night"),
        # a year is not a value of the thing
        trip(reason="hotels for 2024 were wanted"),
        # no reason, or a run that did not fail
        trip(reason=None),
        trip(status=OutcomeStatus.SUCCESS),
        # two digits: too often there by chance ("updated 17 min ago")
        trip(reason="a hotel over the 99 EUR/night budget was chosen"),
    ],
)
def test_not_a_lost_value(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_a_step_that_dropped_it_before_another_wrote_it_again_is_not_blamed() -> None:
    """An intake summary without the budget, then a planner that wrote it: the
    value was lost after the planner, where the search went on without it."""
    summary = "The user wants hotels in Lisbon for two nights, somewhere central."
    run = trip()
    events = list(run.events)
    events.insert(1, ev(9, EventType.LLM_RESPONSE, "intake", input=ASK, output=summary))
    plan = PLAN.replace("null", "120")
    events = [
        e.model_copy(update={"output": plan})
        if e.agent_name == "plan" and e.type is EventType.LLM_RESPONSE
        else e
        for e in events
    ]
    events = [
        e.model_copy(update={"output": {"tasks": plan}})
        if e.agent_name == "plan" and e.type is EventType.AGENT_END
        else e
        for e in events
    ]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.agent_name == "compose"


def test_a_value_the_run_s_last_node_update_holds_was_carried() -> None:
    run = trip()
    tail = ev(40, EventType.AGENT_END, "format", output={"subject": "Budget 120 EUR/night"})
    events = [*run.events[:-1], tail, run.events[-1]]
    assert found(run.model_copy(update={"events": events})) == []


def test_a_tool_call_with_no_text_is_no_reply_that_should_carry_it() -> None:
    """A supervisor's handoff (a tool call alone) was given the order id; the
    billing agent it handed to, which wrote its reply without it, is blamed."""
    handoff = {
        "content": "",
        "tool_calls": [
            {"id": "call_8fJ2kQpL0sX9vB3nT7yW", "name": "transfer_to_billing", "args": {}}
        ],
    }
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="Refund order ORD-5512, it arrived broken."),
        ev(1, EventType.LLM_RESPONSE, "supervisor", input="Refund order ORD-5512", output=handoff),
        ev(
            2,
            EventType.LLM_RESPONSE,
            "billing",
            input="Refund order ORD-5512, it arrived broken.",
            output={"content": "I have refunded your most recent order in full, sorry!"},
        ),
    ).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="ORD-5512 not refunded")}
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("billing", 2)


def test_an_amount_with_a_currency_is_no_year_and_the_quote_is_as_written() -> None:
    run = trip(reason="hotels over the 2000 EUR budget", plan=PLAN)
    events = [
        e.model_copy(update={"input": [{"content": "Plan: max 2,000.00 EUR in all"}]})
        if e.agent_name == "plan" and e.type is EventType.LLM_RESPONSE
        else e
        for e in run.events
    ]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.agent_name == "plan"
    assert [(e.field, e.quote) for e in finding.evidence] == [("input", "2,000.00")]


def test_a_range_that_holds_the_value_carried_it() -> None:
    """A plan of "80-120 EUR" kept the budget: the writer given it after is blamed."""
    (finding,) = found(trip(plan=PLAN.replace("null", '"80-120 EUR"')))
    assert finding.agent_name == "compose"


def test_a_subgraph_node_s_end_echoing_its_state_writes_nothing_again() -> None:
    quote = "Delivery 1,850.00 USD. TOTAL DUE: 43,914.00 USD."
    summary = "Q-311: 40 chairs, 12% discount, total 42,064.00 USD, valid 30 days."
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="all-in cost of 40 chairs?"),
        ev(1, EventType.TOOL_RESULT, "research/fetch", output=quote),
        ev(2, EventType.AGENT_END, "research/fetch", output={"quote": quote}),
        ev(3, EventType.LLM_RESPONSE, "research/summarize", input=quote, output=summary),
        ev(4, EventType.AGENT_END, "research/summarize", output={"summary": summary}),
        ev(5, EventType.AGENT_END, "research", output={"quote": quote, "summary": summary}),
        ev(6, EventType.LLM_RESPONSE, "reply", input=summary, output="42,064 USD in all."),
    ).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="real total is 43,914")}
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("research/summarize", 3)


def test_a_value_the_run_first_acted_with_is_the_wrong_one_not_a_wanted_one() -> None:
    """ "The gateway recorded 12,800,000 JPY; finance approved 128,000": the first is
    the charge node's own argument (a yen amount sent in minor units it does not
    have), which the receipt after it rightly did not repeat. Before, it was read as
    wanted and the receipt blamed for losing it."""
    charge = {"tool_name": "charge"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="Pay quote Q-77 once approved."),
        ev(1, EventType.TOOL_RESULT, "quote", output="Quote Q-77: 128,000 JPY"),
        ev(2, EventType.TOOL_CALL, "charge", input={"amount_minor": 12800000, "currency": "JPY"},
           metadata=charge),
        ev(3, EventType.TOOL_RESULT, "charge", output="charged", metadata=charge),
        ev(35, EventType.AGENT_END, "charge", output={"charged": [["JPY", 12800000]]}),
        ev(4, EventType.LLM_RESPONSE, "receipt", input=[{"content": "Quote Q-77: 128,000 JPY"}],
           output={"content": "Receipt: 128,000 JPY paid for quote Q-77. Thank you!"}),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE,
        reason="the gateway recorded charges [('JPY', 12800000)]; finance approved 128,000 JPY",
    )})  # fmt: skip
    assert found(run) == []


def test_a_wanted_value_a_node_first_passed_to_a_tool_is_still_wanted() -> None:
    """A budget from the run's configuration, which a node passes straight to the
    search tool: the reason says it in words, not as a value the run printed, so it
    is wanted, and the planner given it and dropping it is blamed."""
    search = {"tool_name": "search_hotels"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="Hotels in Lisbon for 2 nights."),
        ev(1, EventType.TOOL_CALL, "search", input={"city": "Lisbon", "max_eur": 120},
           metadata=search),
        ev(2, EventType.TOOL_RESULT, "search", output="Memmo 180 EUR; Lumiares 115 EUR",
           metadata=search),
        ev(3, EventType.LLM_RESPONSE, "plan", input=[{"content": "Budget 120 EUR. Memmo 180 EUR; Lumiares 115 EUR"}],
           output={"content": "Book Memmo Alfama: great views, central, and a rooftop pool."}),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="booked a hotel over the 120 EUR a night budget"
    )})  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("plan", 3)


def _pipeline(*updates: tuple[str, Any]) -> AgentTrajectory:
    """A pipeline of code nodes, each writing its update; the failure names IT-4471."""
    events = [ev(0, EventType.USER_INPUT, None, input={"ticket_id": "IT-4471"})]
    for i, (name, update) in enumerate(updates, start=1):
        events += node(i, name, update)
    reason = "IT closed ticket IT-4471 as resolved, but 2 sign-ins are still live"
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def test_a_node_that_wrote_only_keys_of_its_own_lost_nothing() -> None:
    """A state graph keeps every key an update leaves out: an audit node writing its
    own key, and a check writing nothing, went on with the ticket id still in the
    state. Before, the audit was blamed for losing it."""
    run = _pipeline(
        ("close_ticket", {"ticket": {"id": "IT-4471", "status": "resolved"}}),
        ("policy_check", {}),
        ("security_audit", {"audit": {"live_sessions": 2}}),
    )
    assert found(run) == []


def test_a_node_that_wrote_over_the_key_holding_it_lost_it() -> None:
    run = _pipeline(
        ("close_ticket", {"ticket": {"id": "IT-4471", "status": "resolved"}}),
        ("security_audit", {"audit": {"live_sessions": 2}}),
        ("archive", {"ticket": {"status": "archived"}}),
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("archive", 3)


def _migration(*updates: tuple[str, Any], reason: str) -> AgentTrajectory:
    events = [ev(0, EventType.USER_INPUT, None, input={"table": "users", "batch": 5000})]
    for i, (name, update) in enumerate(updates, start=1):
        events += node(i, name, update)
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def test_a_figure_the_next_node_made_something_else_from_is_lost_there() -> None:
    """A row count no step carried on, and the batch plan made after it: the plan is
    where it went (floor division dropped the last partial batch)."""
    batches = [{"offset": n * 5000, "size": 5000} for n in range(9)]
    run = _migration(
        ("count_source", {"source_rows": 48730}),
        ("plan_batches", {"batches": batches}),
        ("copy", {"copied": 45000}),
        ("cutover", {"reads_from": "users_v2"}),
        reason="users_v2 has 45,000 rows while the legacy users table has 48,730",
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("plan_batches", 2)


def test_a_closing_summary_did_not_lose_a_figure_a_check_found_or_steps_carried() -> None:
    """The variance a reconcile found, and an amount every step carried, are not lost
    by the closing report that sums them up."""
    rows = [{"vendor": "Hydro-Quebec", "amount": 12480.0, "accrued": 1248.0}]
    run = _migration(
        ("load", {"notes": "Hydro-Quebec CAD 12,480.00"}),
        ("draft", {"draft": {"amount": 1248.0}}),
        ("reconcile", {"reconciliation": [{**rows[0], "variance": 11232.0}]}),
        ("close_report", {"close_report": {"accrued": 2163.4, "status": "closed"}}),
        reason="the bill came in at 12,480.00; the books carried 1,248.00: understated by 11,232.00",
    )
    assert found(run) == []


def test_a_node_that_appended_to_the_conversation_did_not_write_over_it() -> None:
    """Appending a message to ``messages`` (a reducer merges it, as the graph's state
    schema records, or by custom without one) keeps the ticket id in the state."""

    def said(text: str) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": text}]}

    run = _pipeline(
        ("close_ticket", said("Closed ticket IT-4471 as resolved.")),
        ("security_audit", said("Audit: 2 sign-in sessions are still live.")),
        ("notify", said("Offboarding done; manager notified.")),
    )
    assert found(run) == []
    schema = {"keys": ["messages"], "reducers": {"messages": "add_messages"}}
    assert found(run.model_copy(update={"metadata": {"state_schema": schema}})) == []


@pytest.mark.parametrize(
    ("reason", "lost"),
    [
        # the value the failure calls wrong is the run's own, not one it needed
        ("the budget it used was wrong (120 EUR); it should have been 150 EUR", False),
        ("the nightly price is wrong; the budget is 120 EUR", True),
        ("the total is incorrect: with the budget it should be 120 EUR", True),
        # words of the answer's wrongness that name the value as the need (a review's)
        ("the answer is wrong because it ignored the 120 EUR/night budget", True),
        ("incorrect hotel: the user's budget was 120 EUR/night", True),
        ("wrong choice - it must stay under 120 EUR per night", True),
        ("an incorrect nightly rate 120 EUR was used", False),
    ],
)
def test_a_value_the_failure_calls_wrong_is_not_one_it_wanted(reason: str, lost: bool) -> None:
    """(A review's find: "the invoice total is wrong ($13,392.00); with the discount
    it is $11,383.20" had the reviewer told to "carry '13,392.00' forward".)"""
    assert bool(found(trip(route="search", reason=reason))) is lost
