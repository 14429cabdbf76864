"""A node that fails on a value an earlier node's decision wrote blames the writer;
and what must not be taken for that (a review of the first version found each)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)


def event(
    i: int, kind: EventType, step: int, agent: str | None = None, **fields: Any
) -> AgentEvent:
    return AgentEvent(id=f"e{i}", type=kind, step_index=step, agent_name=agent, **fields)


def pipeline(
    wrote: str,
    error: str,
    *,
    asked: str = "Refund $42 on order A123",
    middle: list[AgentEvent] = (),
) -> AgentTrajectory:
    """extract's model writes ``wrote``; charge, a later node, raises ``error``."""
    events = [
        event(0, EventType.USER_INPUT, 0, input=asked),
        event(1, EventType.AGENT_START, 1, "extract"),
        event(
            2, EventType.LLM_RESPONSE, 1, "extract", output={"role": "assistant", "content": wrote}
        ),
        *middle,
        event(8, EventType.AGENT_START, 3, "charge"),
        event(
            9,
            EventType.ERROR,
            3,
            "charge",
            parent_id="e8",
            error=ErrorInfo(type=error.split(":")[0], message=error.split(": ", 1)[1]),
        ),
    ]
    return AgentTrajectory(
        id="pipeline",
        goal=asked,
        framework="test",
        events=events,
        outcome=Outcome(
            status=OutcomeStatus.FAILURE,
            reason="the graph raised",
            error=ErrorInfo(type="ValueError", message="raised"),
        ),
    )


def blamed(run: AgentTrajectory) -> tuple[str | None, int, str | None]:
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and report.fix is not None
    return root.agent_name, root.step_index, report.fix.directive


def test_the_writer_of_the_value_is_blamed_and_the_fix_names_the_value() -> None:
    run = pipeline(
        '{"amount": "forty-two dollars"}',
        "ValueError: could not convert string to float: 'forty-two dollars'",
    )
    agent, step, fix = blamed(run)
    assert (agent, step) == ("extract", 1)
    assert fix == (
        "At step 1, extract: the output gave 'forty-two dollars', which charge could not "
        "use at step 3 (\"ValueError: could not convert string to float: 'forty-two "
        "dollars'\"). Give that value in the form charge expects."
    )


def test_a_later_node_that_repeated_the_value_is_not_taken_for_its_writer() -> None:
    review = [
        event(3, EventType.AGENT_START, 2, "review"),
        event(
            4,
            EventType.LLM_RESPONSE,
            2,
            "review",
            output={"role": "assistant", "content": "Amount: forty-two dollars. Looks fine."},
        ),
    ]
    run = pipeline(
        '{"amount": "forty-two dollars"}',
        "ValueError: could not convert string to float: 'forty-two dollars'",
        middle=review,
    )
    assert blamed(run)[:2] == ("extract", 1)


@pytest.mark.parametrize(
    "error",
    ["OperationalError: no such table: orderz", "HTTPError: 404 Not Found: /v2/orderz"],
)
def test_a_value_an_error_names_unquoted_after_a_colon(error: str) -> None:
    """A review: SQLite's own "no such table: orderz" (unquoted) left the node that
    ran the query blamed, while the same error quoting the name blamed the model
    that wrote it."""
    run = pipeline("SELECT count(*) FROM orderz /v2/orderz", error, asked="Count the orders")
    agent, step, fix = blamed(run)
    assert (agent, step) == ("extract", 1)
    assert fix is not None and "the output gave '" in fix


@pytest.mark.parametrize(
    ("wrote", "error", "middle"),
    [
        # a part of a word the model wrote is not what it wrote
        ('{"order": "B4567"}', "KeyError: 'B45'", []),
        # a word an error ends on after a colon: only as a whole word the model wrote
        ("SELECT count(*) FROM orders", "OperationalError: no such table: order", []),
        # a sentence after the colon is not a value
        ("the table is orderz", "OperationalError: cannot read: orderz is locked", []),
        # nor a field's value the message ends on (a second review: blamed a model
        # that had said "pending" in prose)
        ("the payment is still pending", "RuntimeError: payment status: pending", []),
        # Python's type names are not values
        (
            "printed the int and the str",
            "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            [],
        ),
        ("'NoneType' is what I got", "AttributeError: 'NoneType' object has no attribute 'x'", []),
        # a value the model passed on from a tool's result is the tool's, not the model's
        (
            '{"order": "ORD-77"}',
            "KeyError: 'ORD-77'",
            [
                event(
                    3,
                    EventType.TOOL_RESULT,
                    1,
                    "extract",
                    output="found ORD-77",
                    metadata={"tool_name": "find_order"},
                ),
            ],
        ),
    ],
)
def test_what_is_not_a_value_the_decision_wrote(
    wrote: str, error: str, middle: list[AgentEvent]
) -> None:
    if middle:  # (the tool's result comes before the model's answer that passes it on)
        run = pipeline(wrote, error)
        events = [*run.events[:2], *middle, *run.events[2:]]
        run = run.model_copy(update={"events": events})
    else:
        run = pipeline(wrote, error)
    agent, _, fix = blamed(run)
    assert agent == "charge" and "the output gave" not in (fix or "")
