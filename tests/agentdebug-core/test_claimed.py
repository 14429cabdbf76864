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

    monkeypatch.setattr(rules, "claims_done", lambda text, tool: None)
    root = diagnose(booking_run(DECLINED, CLAIM)).root_cause
    assert root is not None
    assert (root.step_index, root.mode_id) == (1, "system.tool_error")


def test_a_call_s_own_fault_is_still_charged_to_the_call() -> None:
    # a validation error is the call's: the reply's claim is found, but covers nothing
    run = booking_run("ValidationError: invalid arguments: flight must be a flight number", CLAIM)
    (found,) = ignored(run)
    assert "covers" not in found.metadata
    hypotheses = diagnose(run).hypotheses
    assert ("travel_agent", 1) in [(h.agent_name, h.step_index) for h in hypotheses]


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
    ],
)
def test_a_reply_that_admits_the_failure_or_claims_nothing_is_no_claim(reply: str) -> None:
    assert ignored(booking_run(DECLINED, reply)) == []


def test_a_tool_that_only_reads_has_nothing_to_claim() -> None:
    assert claim_patterns("search_flights") == ()
    assert claims_done("The flights were searched and confirmed.", "get_weather") is None
    assert (
        ignored(booking_run("ERROR 503: service unavailable", CLAIM, tool="search_flights")) == []
    )


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
    ],
)
def test_a_tool_s_own_verb_said_as_done_is_a_claim(tool: str, reply: str, said: str) -> None:
    found = claims_done(reply, tool)
    assert found is not None and found.group() == said
