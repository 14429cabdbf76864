"""A model that answered after acting on some of the items the request listed, and
not on the one the failure names: blamed at the answer that stopped."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    EventType,
    Outcome,
    OutcomeStatus,
)
from conftest import ev, traj

ASK = "Before we publish revenue-daily, run the DQ suite on orders, customers and payments."
REASON = "finance found 1,212 orders with no customer_id; the sign-off lists customers, payments"


def dq(
    tables: list[str],
    *,
    ask: Any = ASK,
    reason: str = REASON,
    answer: dict[str, Any] | None = None,
) -> AgentTrajectory:
    """An agent runs ``run_dq_suite`` on ``tables`` one after another, then answers."""
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input=ask)]
    for n, table in enumerate(tables):
        step = 2 * n + 1
        call = {"name": "run_dq_suite", "args": {"table": table}}
        events += [
            ev(step, EventType.LLM_RESPONSE, "agent", input="...", output={"tool_calls": [call]}),
            ev(step, EventType.TOOL_CALL, "agent", input={"table": table},
               metadata={"tool_name": "run_dq_suite"}),
            ev(step + 1, EventType.TOOL_RESULT, "tools", output={"table": table, "passed": True}),
        ]  # fmt: skip
    said = answer or {"content": "All checks passed; revenue-daily is cleared to publish."}
    events.append(
        ev(2 * len(tables) + 1, EventType.LLM_RESPONSE, "agent", input="...", output=said)
    )
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "asked_item_skipped"]


def test_the_answer_after_two_of_three_tables_is_blamed() -> None:
    (finding,) = found(dq(["customers", "payments"]))
    assert (finding.agent_name, finding.step_index) == ("agent", 5)
    assert finding.mode_id == "verification.premature_success"
    assert finding.message == (
        "agent answered at step 5 after calling run_dq_suite for 'customers', 'payments' of "
        "the items the request listed ('orders', 'customers', 'payments'); no call was given "
        "'orders', which the failure names"
    )


def test_a_list_in_the_input_payload_is_read_too() -> None:
    ask = {
        "request": "Run the DQ suite before publishing.",
        "tables": ["Orders", "customers", "payments"],
    }
    (finding,) = found(dq(["customers", "payments"], ask=ask))
    assert finding.metadata["value"] == "orders"


@pytest.mark.parametrize(
    "run",
    [
        dq(["customers", "payments", "orders"]),  # every table done
        dq(["customers"]),  # one item done: not a walk through the list
        dq(["customers", "payments"], reason="the dashboard went out late"),  # names no item
        # the last reply asked for another tool: it did not stop there
        dq(["customers", "payments"], answer={"tool_calls": [{"name": "publish", "args": {}}]}),
        # a request that lists no items
        dq(["customers", "payments"], ask="Run the DQ suite on the usual tables."),
    ],
)
def test_not_an_item_skipped(run: AgentTrajectory) -> None:
    assert found(run) == []


def ticket(
    called: list[str],
    *,
    ask: str = "Ticket IT-4471: reset his password, revoke all of his active sessions, "
    "and disable the laptop.",
    offered: tuple[str, ...] = ("reset_password", "revoke_sessions", "disable_device"),
) -> AgentTrajectory:
    """A service-desk model offered ``offered`` calls ``called`` and says it is done."""
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input=ask)]
    for n, tool in enumerate(called):
        step = 2 * n + 1
        events += [
            ev(step, EventType.LLM_RESPONSE, "desk", input="...",
               output={"tool_calls": [{"name": tool, "args": {"user": "jlee"}}]}),
            ev(step, EventType.TOOL_CALL, "desk", input={"user": "jlee"},
               metadata={"tool_name": tool}),
            ev(step + 1, EventType.TOOL_RESULT, "tools", output="done"),
        ]  # fmt: skip
    end = 2 * len(called) + 1
    events.append(
        ev(end, EventType.LLM_RESPONSE, "desk", input="...", output={"content": "Ticket done."})
    )
    agents = [AgentInfo(name="desk", role="node"), AgentInfo(name="tools", tools=list(offered))]
    failure = Outcome(status=OutcomeStatus.FAILURE, reason="his account still has 2 live sign-ins")
    return traj(*events).model_copy(update={"outcome": failure, "agents": agents})


def actions(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "asked_action_skipped"]


def test_the_answer_without_an_action_the_request_asked_for_is_blamed() -> None:
    (finding,) = actions(ticket(["reset_password", "disable_device"]))
    assert (finding.agent_name, finding.step_index) == ("desk", 5)
    assert finding.message.startswith(
        "desk answered at step 5 without calling revoke_sessions, a tool it was offered that "
        "the request asked for ('ticket it-4471: reset his password, revoke all of his"
    )


@pytest.mark.parametrize(
    "run",
    [
        ticket(["reset_password", "revoke_sessions", "disable_device"]),  # all done
        ticket(["reset_password"], ask="Reset his password; do not revoke his sessions."),
        ticket(["reset_password"], ask="Reset his password."),  # not asked for
        ticket([]),  # no tool called at all: not a run that stopped part way
        # a read the request names is not an action left undone
        ticket(["reset_password"], ask="Reset his password and list his sessions.",
               offered=("reset_password", "list_sessions")),
    ],
)  # fmt: skip
def test_not_an_action_skipped(run: AgentTrajectory) -> None:
    assert actions(run) == []


@pytest.mark.parametrize(
    "ask",
    [
        "If his laptop was stolen, revoke his sessions; it was not. Reset his password.",
        "Can you revoke the sessions later? Reset his password now.",
        "Reset his password. Don\u2019t revoke his sessions, he is on a flight.",
        "I asked you to revoke his sessions, but I changed my mind. Reset his password.",
    ],
)
def test_a_condition_a_question_a_negation_or_a_change_of_mind_asks_for_nothing(ask: str) -> None:
    """(A review found each read as a request: conditions, questions, a curly
    apostrophe, a change of mind.)"""
    assert actions(ticket(["reset_password", "disable_device"], ask=ask)) == []


def test_the_system_prompt_s_capabilities_and_another_tool_of_its_words_are_no_request() -> None:
    ask = {
        "messages": [
            {"role": "system", "content": "You can reset passwords and revoke sessions."},
            {"role": "user", "content": "Please reset my password."},
        ]
    }
    assert actions(ticket(["reset_password"], ask=ask)) == []
    # "revoke the sessions" done through a tool of the same words, bulk_revoke
    done = ticket(["reset_password", "bulk_revoke"], offered=("revoke_sessions", "bulk_revoke"))
    assert actions(done) == []


@pytest.mark.parametrize(
    "run",
    [
        # an "or" list asks for one of them
        dq(["customers", "payments"], ask="Run the DQ suite on orders, customers or payments."),
        # the item acted on inside another call's text (a query)
        dq(["customers", "payments", "SELECT count(*) FROM orders WHERE customer_id IS NULL"]),
        # the answer said it was left undone
        dq(
            ["customers", "payments"],
            answer={"content": "I could not check orders: do not publish."},
        ),
    ],
)
def test_an_or_list_an_item_done_another_way_or_said_undone_is_not_skipped(
    run: AgentTrajectory,
) -> None:
    assert found(run) == []


def test_one_call_given_two_of_the_items_is_no_walk_through_them() -> None:
    """``convert(from="EUR", to="USD")`` beside "we price in USD, EUR and GBP"."""
    ask = "We price in USD, EUR and GBP; convert the EUR invoice to USD."
    args = {"from": "EUR", "to": "USD"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=ask),
        ev(1, EventType.LLM_RESPONSE, "agent", input="...",
           output={"tool_calls": [{"name": "convert", "args": args}]}),
        ev(1, EventType.TOOL_CALL, "agent", input=args, metadata={"tool_name": "convert"}),
        ev(2, EventType.TOOL_RESULT, "tools", output="ok"),
        ev(3, EventType.LLM_RESPONSE, "agent", input="...", output={"content": "Converted."}),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="the GBP price list was never updated"
    )})  # fmt: skip
    assert found(run) == []
