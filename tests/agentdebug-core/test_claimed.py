"""A reply saying done what a tool just failed to do ("booked" after ``book_flight``
was declined): blamed on the reply, with a fix that says to report the failure; the
call is not blamed where the world refused it (a card declined, a timeout)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.detect.claimed import claim_patterns, claims_done
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

GOAL = "Book me on the evening flight FRA to JFK on March 14. Name: M. Okafor"
DECLINED = "ERROR 402: card ending 4411 was declined by issuer; no seat was held."
CLAIM = "You're all set! LH 401 on 14 March at 17:40 is booked for M. Okafor (EUR 612)."


def booking_run(result: str, reply: str, *, tool: str = "book_flight") -> AgentTrajectory:
    meta = {"tool_name": tool}
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input=GOAL),
        ev(1, EventType.TOOL_CALL, "travel_agent", input={"flight": "LH 401"}, metadata=meta),
        ev(2, EventType.TOOL_RESULT, "tools", output=result, parent_id="e1", metadata=meta),
        ev(3, EventType.LLM_RESPONSE, "travel_agent", output=reply),
        ev(4, EventType.FINAL_ANSWER, "travel_agent", output=reply),
    ]
    run = traj(*events)
    return run.model_copy(
        update={
            "goal": GOAL,
            "outcome": Outcome(status=OutcomeStatus.FAILURE, reason="no booking exists"),
        }
    )


def ignored(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "error_ignored"]


def test_a_reply_saying_booked_after_a_declined_booking_is_blamed_with_a_fix() -> None:
    run = booking_run(DECLINED, CLAIM)
    (found,) = ignored(run)
    assert found.message == (
        "travel_agent said book_flight's action was done ('booked') after it failed at step 2"
    )
    quoted = "LH 401 on 14 March at 17:40 is booked for M. Okafor (EUR 612)."
    assert [e.quote for e in found.evidence] == [quoted, DECLINED]
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "travel_agent",
        3,
        "observation.error_ignored",
    )
    assert report.fix is not None
    assert report.fix.directive == (
        f'At step 3, travel_agent: the reply says it was done ("{quoted}"), but book_flight '
        f'failed at step 2 ("{DECLINED}"). Say that it failed and why, and what can be done '
        "next, instead of confirming it."
    )
    # the declined call is not blamed: the result that failed is, below the reply
    # and the answer that repeated it
    assert [(h.agent_name, h.step_index) for h in report.hypotheses] == [
        ("travel_agent", 3),
        ("travel_agent", 4),
        ("tools", 2),
    ]


def test_without_the_claim_the_declined_call_was_blamed(monkeypatch: pytest.MonkeyPatch) -> None:
    # (what the claim changes: the same run, its reply's claim not read)
    from agentdebug.detect import rules

    monkeypatch.setattr(rules, "claimed", lambda ctx, failed, reply, succeeded: None)
    root = diagnose(booking_run(DECLINED, CLAIM)).root_cause
    assert root is not None
    assert (root.step_index, root.mode_id) == (1, "system.tool_error")


@pytest.mark.parametrize(
    "error",
    [
        "ValidationError: invalid arguments: flight must be a flight number",
        "ValidationError: qty 402 exceeds the per-order maximum",  # (402: no HTTP status)
    ],
)
def test_a_call_s_own_fault_is_still_charged_to_the_call_first(error: str) -> None:
    # a validation error is the call's: the reply's claim is found, but covers nothing,
    # and comes after the call (its consequence)
    run = booking_run(error, CLAIM)
    (found,) = ignored(run)
    assert "covers" not in found.metadata
    hypotheses = diagnose(run).hypotheses
    assert [(h.agent_name, h.step_index) for h in hypotheses][:2] == [
        ("travel_agent", 1),
        ("travel_agent", 3),
    ]


def test_a_record_not_found_covers_the_call_only_for_the_task_s_own_record() -> None:
    # the task's flight not found: the world's; a flight the agent made up: the call's
    run = booking_run("Error: flight LH 401 not found", CLAIM)
    events = [
        e.model_copy(update={"input": {"flight": "LH 401"}}) if e.id == "e1" else e
        for e in run.events
    ]
    (found,) = ignored(run.model_copy(update={"events": events, "goal": "Book LH 401"}))
    assert found.metadata.get("covers") == "e2"
    events = [
        e.model_copy(update={"input": {"flight": "LH 4011"}}) if e.id == "e1" else e
        for e in run.events
    ]
    (found,) = ignored(run.model_copy(update={"events": events, "goal": "Book LH 401"}))
    assert "covers" not in found.metadata


@pytest.mark.parametrize(
    "reply",
    [
        "Your card ending 4411 was declined, so LH 401 is not booked yet.",
        "Unfortunately the booking did not go through. Do you have another card?",
        "LH 401 has a seat at EUR 612. Shall I get it booked?",
        "LH 401 will be booked once you send another card.",
        "LH 401 is not booked: the issuer said no.",
        "I could not book LH 401.",
        "Here are the evening flights: LH 401 at 17:40.",
        # (a review's finds: denied, put off or made a condition before the verb in
        # its sentence, or "yet" after it; the world's refusal said in the reply)
        "No flight has been booked yet; please send another card.",
        "Nothing has been booked. Want me to try the 19:05 instead?",
        "I'll have it booked as soon as you send a new card.",
        "Once it's booked, you'll get an email from Lufthansa.",
        "You'll get an email when the seat is booked.",
        "The fare may change before it's booked.",
        "The Adlon is fully booked for those nights.",
        "Please let me know once you have confirmed the card details.",
    ],
)
def test_a_reply_that_admits_the_failure_or_claims_nothing_is_no_claim(reply: str) -> None:
    assert ignored(booking_run(DECLINED, reply)) == []


@pytest.mark.parametrize(
    "tool", ["search_flights", "get_weather", "web_search", "sql_db_query", "wikipedia"]
)
def test_a_tool_that_only_reads_has_nothing_to_claim(tool: str) -> None:
    assert claim_patterns(tool) is None
    assert claims_done("Historians have confirmed the date: it is done.", tool) is None
    assert ignored(booking_run("ERROR 503: service unavailable", CLAIM, tool=tool)) == []


def test_a_confirmation_counts_only_in_a_sentence_that_names_the_call() -> None:
    assert claims_done("Sources confirmed the fare. Bye.", "book_flight") is None
    found = claims_done("Your booking is confirmed.", "book_flight")
    assert found is not None and found.group() == "confirmed"
    found = claims_done("LH 401: all set.", "reserve", arguments=["LH 401"])
    assert found is not None and found.group() == "all set"


def test_a_done_form_another_tool_that_worked_says_is_not_the_failed_one_s() -> None:
    # book_flight worked, book_hotel failed: "is booked" is the flight's
    reply = "Your flight LH 401 is booked. The Adlon had no rooms for those nights."
    assert claims_done(reply, "book_hotel", succeeded=["book_flight"]) is None
    assert claims_done("LH 401 is booked.", "book_hotel") is not None


def test_a_node_s_own_error_names_no_tool_to_claim_for() -> None:
    # (a node's error reads as its module's: "langgraph.node's action was done")
    run = booking_run(DECLINED, "All set: your langgraph node is confirmed.")
    events = [
        e.model_copy(update={"metadata": {}, "module": "langgraph.node"})
        if e.type is EventType.TOOL_RESULT
        else e
        for e in run.events
    ]
    assert ignored(run.model_copy(update={"events": events})) == []


@pytest.mark.parametrize(
    ("tool", "reply", "said"),
    [
        ("issueRefund", "Your refund of $40 was issued today.", "issued"),
        ("issue_refund", "I've refunded the $40 to your card.", "refunded"),
        ("send_email", "The email was sent to Ana.", "sent"),
        ("cancel_order", "Order 17 is cancelled.", "cancelled"),
        ("place-order", "Your order was placed.", "placed"),
        ("apply_coupon", "SAVE10 applied: you pay $36.", "applied"),
        ("transfer_funds", "Done: $500 transferred to savings.", "transferred"),
        ("create_ticket", "Ticket created: #4411.", "created"),
        ("stop_instance", "Instance i-123 has been stopped.", "stopped"),
        ("commit_changes", "Your changes were committed to main.", "committed"),
        ("check_in_guest", "Ms. Okafor is checked in to room 412.", "checked"),
        ("send_email", "The email has been delivered to Ana.", "delivered"),
        ("book_flight", "Done! LH 401 is reserved for M. Okafor.", "reserved"),
        ("book_flight", "No problem! LH 401 is booked for M. Okafor.", "booked"),
    ],
)
def test_a_tool_s_own_verb_said_as_done_is_a_claim(tool: str, reply: str, said: str) -> None:
    found = claims_done(reply, tool)
    assert found is not None and found.group() == said


def test_over_a_tool_s_own_error_the_claim_comes_first_and_the_call_after_it() -> None:
    """A held-out probe's miss: the tool raised, saying what to do next (a 2FA code);
    the reply said it was done. The call may have been right; the claim is not."""
    error = (
        "ValueError: account has 2FA enabled: confirmation_code required, call "
        "get_confirmation_code and retry"
    )
    run = booking_run(error, CLAIM)
    (found,) = ignored(run)
    assert found.metadata.get("claimed") == "e2" and "covers" not in found.metadata
    hypotheses = diagnose(run).hypotheses
    assert [(h.agent_name, h.step_index) for h in hypotheses][:2] == [
        ("travel_agent", 3),
        ("travel_agent", 1),
    ]


def test_an_e_mail_said_with_its_hyphen_is_a_claim_of_send_email() -> None:
    """ "The quote was e-mailed" after ``send_email`` failed is a claim of it (before:
    missed, the hyphen matching neither "sent" nor "emailed")."""
    found = claims_done("The quote was e-mailed to the client.", "send_email")
    assert found is not None and found.group() == "e-mailed"
    assert claims_done("The quote was emailed to the client.", "send_email") is not None
    assert claims_done("The e-mail could not be sent yet.", "send_email") is None
