"""An action run again with the same arguments after a timeout, which leaves unknown
whether the first took effect (a charge made twice): blamed on the repeat."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)
from conftest import ev, traj

ARGS = {"order_id": "ord-5510", "amount_cents": 4999}
TIMEOUT = "TimeoutError: read timeout after 10s waiting for gateway response"
TIMEOUT_INFO = ErrorInfo(message=TIMEOUT)


def charged_twice(
    first: str = TIMEOUT,
    *,
    tool: str = "gateway_charge",
    again: dict[str, Any] | None = None,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    meta = {"tool_name": tool}
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input="Order ord-5510, 49.99 EUR"),
        ev(1, EventType.TOOL_CALL, "pay", input=ARGS, metadata=meta),
        ev(2, EventType.TOOL_RESULT, "pay", error=first, parent_id="e1", metadata=meta),
        ev(3, EventType.TOOL_CALL, "pay", input=again or ARGS, metadata=meta),
        ev(4, EventType.TOOL_RESULT, "pay", output="charge ch_2 ok", parent_id="e3", metadata=meta),
        ev(5, EventType.FINAL_ANSWER, "receipt", output="Payment received: 49.99 EUR."),
    ]
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=status, reason="charged twice")})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "action_repeated_after_timeout"]


def test_a_charge_run_again_after_a_timeout_is_blamed_with_a_fix() -> None:
    run = charged_twice()
    (finding,) = found(run)
    assert finding.message == (
        "pay ran gateway_charge again with the same arguments at step 3 after its call at "
        "step 1 failed without saying whether it took effect (TimeoutError: read timeout "
        "after 10s waiting for gateway response)"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "pay",
        3,
        "action.repeated_action",
    )
    assert report.fix is not None and report.fix.directive.endswith(
        "Make the call idempotent (an idempotency key), or check whether the first took "
        "effect before running it again."
    )


@pytest.mark.parametrize(
    ("first", "tool", "again", "status"),
    [
        # refused: not carried out, a retry does no harm
        ("ERROR 402: card declined", "gateway_charge", None, OutcomeStatus.FAILURE),
        ("429 Too Many Requests", "gateway_charge", None, OutcomeStatus.FAILURE),
        # a tool that only reads may be asked again
        (TIMEOUT, "get_order", None, OutcomeStatus.FAILURE),
        # other arguments: another action
        (TIMEOUT, "gateway_charge", {"order_id": "ord-5511"}, OutcomeStatus.FAILURE),
        # a run that succeeded
        (TIMEOUT, "gateway_charge", None, OutcomeStatus.SUCCESS),
    ],
)
def test_what_is_not_an_action_repeated_after_a_timeout(
    first: str, tool: str, again: dict[str, Any] | None, status: OutcomeStatus
) -> None:
    assert not found(charged_twice(first, tool=tool, again=again, status=status))


@pytest.mark.parametrize(
    ("first", "tool", "args"),
    [
        # (a review's finds) the repeat is the same request: a key says so
        (TIMEOUT, "gateway_charge", {**ARGS, "idempotency_key": "k-1"}),
        # an action that sets a value: the same done twice
        (TIMEOUT, "set_status", ARGS),
        (TIMEOUT, "upsert_contact", ARGS),
        # the error says nothing was carried out
        ("ConnectTimeout: timed out connecting (request not sent)", "gateway_charge", ARGS),
        ("Timed out acquiring lock; no changes were made, safe to retry", "gateway_charge", ARGS),
        # "no response" from a person is no transport failure
        ("Error: recipient gave no response", "gateway_charge", ARGS),
    ],
)
def test_a_repeat_that_cannot_do_it_twice_is_not_read(
    first: str, tool: str, args: dict[str, Any]
) -> None:
    run = charged_twice(first, tool=tool)
    events = [
        e.model_copy(update={"input": args}) if e.type is EventType.TOOL_CALL else e
        for e in run.events
    ]
    assert not found(run.model_copy(update={"events": events}))


def test_a_repeat_that_failed_again_did_nothing_twice() -> None:
    run = charged_twice()
    events = [
        e.model_copy(update={"output": None, "error": TIMEOUT_INFO}) if e.id == "e4" else e
        for e in run.events
    ]
    assert not found(run.model_copy(update={"events": events}))


def test_a_timeout_said_by_the_error_s_type_alone_is_read() -> None:
    run = charged_twice()
    events = [
        e.model_copy(update={"error": ErrorInfo(type="TimeoutError", message="")})
        if e.id == "e2"
        else e
        for e in run.events
    ]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.message.endswith("(TimeoutError)")
