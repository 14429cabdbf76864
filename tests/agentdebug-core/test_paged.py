"""A model that acted on the first page of a result that said more followed, when the
failure names what was on the pages never read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

PAGE = {
    "tickets": [{"id": t} for t in ("T-4410", "T-4417", "T-4431", "T-4436")],
    "page": 1,
    "total": 7,
    "next_page": 2,
}
REASON = "3 stale tickets still open: T-4502, T-4519, T-4523"


def tickets(
    result: Any = PAGE,
    *,
    again: bool = False,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    list_call = {"tool_name": "list_tickets"}
    events = [
        ev(0, EventType.USER_INPUT, None, input="Close every stale ticket."),
        ev(1, EventType.TOOL_CALL, "agent", input={"page": 1}, metadata=list_call),
        ev(2, EventType.TOOL_RESULT, "tools", output=json.dumps(result), metadata=list_call),
    ]
    if again:
        events.append(ev(3, EventType.TOOL_CALL, "agent", input={"page": 2}, metadata=list_call))
    n = len(events)
    events += [
        ev(n, EventType.LLM_RESPONSE, "agent", output={"content": "", "tool_calls": [{}]}),
        ev(
            n + 1,
            EventType.TOOL_CALL,
            "agent",
            input={"ids": ["T-4410"]},
            metadata={"tool_name": "close_tickets"},
        ),
        ev(n + 2, EventType.LLM_RESPONSE, "agent", output={"content": "Closed all stale tickets."}),
    ]
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "more_pages_unread"]


def test_the_model_that_went_on_from_the_first_page_is_blamed() -> None:
    run = tickets()
    (finding,) = found(run)
    assert finding.message == (
        "agent went on from list_tickets's result at step 2, which said more followed "
        '("next_page":2), without asking for the rest; the failure names T-4502, T-4519, '
        "T-4523, which the run never read"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        3,
        "observation.poor_retrieval",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 3, agent: list_tickets's result at step 2 was one page of more "
        '("next_page":2); call list_tickets for the next pages until none is left before '
        "acting on the list."
    )


@pytest.mark.parametrize(
    "result",
    [
        {"items": [], "has_more": True},
        {"items": [], "page": 1, "total_pages": 2},
        {"data": [], "meta": {"next_cursor": "c2"}},
        {"results": [], "next": "https://api.example.com/tickets?page=2"},
    ],
)
def test_the_ways_a_result_says_more_follow(result: dict[str, Any]) -> None:
    assert len(found(tickets(result))) == 1


@pytest.mark.parametrize(
    "run",
    [
        # it asked for the next page
        tickets(again=True),
        # the last page
        tickets({**PAGE, "next_page": None}),
        tickets({"items": [], "has_more": False, "page": 2, "total_pages": 2}),
        # what failed was read: not a page left unread
        tickets(reason="T-4410 was closed without a note"),
        # a run that did not fail
        tickets(status=OutcomeStatus.SUCCESS),
    ],
)
def test_not_a_page_left_unread(run: AgentTrajectory) -> None:
    assert found(run) == []
