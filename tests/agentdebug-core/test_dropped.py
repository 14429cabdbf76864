"""A node that ran a subgraph and wrote an empty value instead of its result
(``out.get("summary", "")`` where the subgraph wrote ``findings``): blamed on that
node, with a fix naming the key the result is under."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

FOUND = "Measles cases in the US reached 285 in 2024, the highest since 2019."


def wrapped(
    update: Any,
    *,
    answer: str = "Sorry, I couldn't find anything.",
    status: OutcomeStatus = OutcomeStatus.FAILURE,
    inner: str = "research/summarize",
) -> AgentTrajectory:
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input={"question": "US measles cases in 2024?"}),
        ev(1, EventType.AGENT_START, "research"),
        ev(2, EventType.AGENT_START, inner),
        ev(3, EventType.LLM_RESPONSE, inner, output={"content": FOUND}),
        ev(4, EventType.AGENT_END, inner, output={"findings": FOUND}),
        ev(5, EventType.AGENT_END, "research", output=update),
        ev(6, EventType.AGENT_START, "answer"),
        ev(7, EventType.AGENT_END, "answer", output={"answer": answer}),
        ev(8, EventType.FINAL_ANSWER, "answer", output=answer),
    ]
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=status, reason="no answer given")})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "result_dropped"]


def test_the_node_that_wrote_an_empty_value_over_its_subgraph_s_result_is_blamed() -> None:
    run = wrapped({"notes": ""})
    (finding,) = found(run)
    assert finding.message == (
        'research wrote "notes":"" after research/summarize found findings: '
        f"{FOUND!r} at step 4; nothing after it held that result"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "research",
        5,
        "coordination.information_withholding",
    )
    assert report.fix is not None and report.fix.directive == (
        f"At step 5, research: pass on what research/summarize returned (findings: {FOUND!r}): "
        'the update wrote "notes":"" instead. Read the result under the key it is written '
        "to ('findings') and put it in the state the next step reads."
    )


@pytest.mark.parametrize(
    ("update", "answer", "status", "inner"),
    [
        # the result passed on, under another key
        ({"notes": FOUND, "errors": []}, FOUND, OutcomeStatus.FAILURE, "research/summarize"),
        # written empty, but the result reached the answer another way
        ({"notes": ""}, FOUND, OutcomeStatus.FAILURE, "research/summarize"),
        # nothing written empty
        ({"notes": "see the sources"}, "none", OutcomeStatus.FAILURE, "research/summarize"),
        # a status key reset beside what it passed on, transformed (a review's find)
        ({"data": {"cases": 285}, "error": None}, "none", OutcomeStatus.FAILURE, "research/x"),
        # a run that succeeded
        ({"notes": ""}, "none", OutcomeStatus.SUCCESS, "research/summarize"),
        # the node before it, not one inside it ("researcher" is not under "research")
        ({"notes": ""}, "none", OutcomeStatus.FAILURE, "researcher"),
    ],
)
def test_what_is_not_a_dropped_result(
    update: Any, answer: str, status: OutcomeStatus, inner: str
) -> None:
    assert not found(wrapped(update, answer=answer, status=status, inner=inner))


def test_a_message_list_s_contents_are_the_result_dropped() -> None:
    # (a create_react_agent subgraph: its result is its messages)
    run = wrapped({"notes": ""})
    events = [
        e.model_copy(update={"output": {"messages": [{"role": "assistant", "content": FOUND}]}})
        if e.id == "e4"
        else e
        for e in run.events
    ]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.message.startswith('research wrote "notes":"" after research/summarize found')
