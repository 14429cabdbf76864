"""A tool call given an identifier that nothing in the run had given: the model that
made it up is blamed, not the answer that reported what the call did."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

ASK = "Please cancel the kettle I ordered yesterday. My email is sam.ortiz@example.com"
PROFILE = '{"customer_id": "C-4410", "name": "Sam Ortiz", "tier": "gold"}'
REASON = "Sam's kettle order is still processing"


def support(
    args: dict[str, Any] | None = None,
    *,
    tool: str = "cancel_order",
    profile: str = PROFILE,
    ask: str = ASK,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    """A support agent: it looks the customer up, then calls ``tool`` with ``args``."""
    args = {"order_id": "ORD-20931"} if args is None else args
    lookup = {"tool_name": "get_customer"}
    call = {"id": "t2", "name": tool, "args": args}
    events = [
        ev(0, EventType.USER_INPUT, None, input=ask),
        ev(1, EventType.LLM_RESPONSE, "agent", input=[{"role": "user", "content": ask}],
           output={"content": "", "tool_calls": [{"id": "t1", "name": "get_customer",
                                                  "args": {"email": "sam.ortiz@example.com"}}]}),
        ev(2, EventType.TOOL_CALL, "agent", input={"email": "sam.ortiz@example.com"},
           metadata=lookup),
        ev(3, EventType.TOOL_RESULT, "tools", output=profile, metadata=lookup),
        ev(4, EventType.LLM_RESPONSE, "agent", input=[{"role": "tool", "content": profile}],
           output={"content": "", "tool_calls": [call]}),
        ev(5, EventType.TOOL_CALL, "agent", input=args, metadata={"tool_name": tool}),
        ev(6, EventType.TOOL_RESULT, "tools", output="done", metadata={"tool_name": tool}),
        ev(7, EventType.LLM_RESPONSE, "agent", input=[{"role": "tool", "content": "done"}],
           output={"content": "Done! Your order is cancelled and refunded."}),
    ]  # fmt: skip
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "unsourced_argument"]


def test_the_model_that_made_up_an_id_is_blamed() -> None:
    run = support()
    (finding,) = found(run)
    assert finding.message == (
        "agent called cancel_order with order_id='ORD-20931', which nothing in the run "
        "had given (not the request, nor any tool's result)"
    )
    assert finding.evidence[0].quote == "ORD-20931"
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        4,
        "reflection.hallucinated_fact",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 4, agent: 'ORD-20931' appears nowhere before this call; find the "
        "order_id with a tool that lists them (or ask the user) and call cancel_order "
        "with the value it gives, not an assumed one."
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"profile": PROFILE[:-1] + ', "orders": ["ORD-20931"]}'}, "a tool's result gave it"),
        ({"ask": ASK + " (order 20931)"}, "the user gave its digits"),
        ({"ask": ASK + " Order ord-20931."}, "the user gave it, in other case"),
        ({"status": OutcomeStatus.SUCCESS}, "the run did not fail"),
        ({"tool": "get_order"}, "a read that matters to no named failure"),
        ({"tool": "create_ticket", "args": {"ticket_id": "TKT-1042"}}, "a new id to make"),
        (
            {"args": {"customer_id": "C-4410", "idempotency_key": "req-88123"}},
            "a key minted by design",
        ),
        ({"args": {"order_id": "the kettle"}}, "no identifier"),
        ({"args": {"amount": 18400}}, "a figure, not under an id's key"),
    ],
)
def test_an_id_the_run_gave_or_that_matters_to_nothing_is_no_finding(
    change: dict[str, Any], why: str
) -> None:
    assert found(support(**change)) == [], why


def test_a_read_given_a_made_up_id_is_blamed_when_the_failure_names_it() -> None:
    run = support(tool="get_order", reason="answered about ORD-20931, not Sam's order")
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("agent", 4)


def test_an_id_under_an_id_key_is_read_by_its_digits() -> None:
    """A bare number under ``account_number``, ``orderId``: an identifier too."""
    for args in ({"account_number": "7734102"}, {"orderId": 58213}):
        (finding,) = found(support(args=args, tool="close_account"))
        assert finding.step_index == 4, args


def test_the_reply_that_first_said_the_id_is_blamed() -> None:
    """The model said the id in a reply before the call that used it: that reply is
    where it was made up."""
    run = support()
    said = ev(
        35,
        EventType.LLM_RESPONSE,
        "agent",
        input=[{"role": "tool", "content": PROFILE}],
        output={"content": "Your kettle order is ORD-20931; cancelling it now."},
    )
    events = [*run.events[:4], said, *run.events[4:]]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.event_id == "e35"
