"""A model that gives the same reply again though its input changed (a writer that
re-emits its draft after a critique) is blamed, not the agent that repeated itself
consistently (a critic answering the same draft the same way)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

DRAFT = "Remote work raises productivity by 13%, according to a large study."
CRITIQUE = "REVISE: cite the source (a URL) for the 13% claim."


def reply(i: int, agent: str, given: str, said: Any) -> AgentEvent:
    prompt = [{"role": "system", "content": "Do your part."}, {"role": "user", "content": given}]
    return ev(i, EventType.LLM_RESPONSE, agent, input=prompt, output=said)


def loop(rounds: int = 3, *, status: OutcomeStatus = OutcomeStatus.FAILURE) -> AgentTrajectory:
    events = [ev(0, EventType.USER_INPUT, None, input="write on remote work")]
    critique = ""
    for _ in range(rounds):
        events.append(
            reply(
                len(events),
                "writer",
                f"Critique: {critique}",
                {"role": "assistant", "content": DRAFT},
            )
        )
        events.append(
            reply(len(events), "critic", DRAFT, {"role": "assistant", "content": CRITIQUE})
        )
        critique = CRITIQUE
    run = traj(*events)
    return run.model_copy(
        update={"outcome": Outcome(status=status, reason="the recursion limit was reached")}
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "reply_unchanged"]


def test_the_writer_that_ignored_the_critique_is_found_and_blamed() -> None:
    run = loop()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.mode_id) == (
        "writer",
        3,
        "reflection.no_adaptation",
    )
    assert finding.message == (
        "writer's model gave the same reply at step 3 as at step 1, though what it was "
        f"given had changed (now: 'Critique: {CRITIQUE}')"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("writer", 3)
    assert report.fix is not None and report.fix.directive == (
        "At step 3, writer: the reply repeated the one at step 1 word for word, though the "
        f"input had changed ('Critique: {CRITIQUE}'). Act on what changed: revise the reply "
        "to address it, or say why it cannot be done."
    )


@pytest.mark.parametrize(
    "events",
    [
        # the same input answered the same way (the critic's part alone)
        [reply(1, "critic", DRAFT, CRITIQUE), reply(2, "critic", DRAFT, CRITIQUE)],
        # a short label may well repeat for other inputs
        [
            reply(1, "router", "ask about refunds", "route: billing"),
            reply(2, "router", "ask about invoices", "route: billing"),
        ],
        # a tool call repeated is the repeated-action rule's
        [
            reply(
                1,
                "agent",
                "find A",
                {"content": "", "tool_calls": [{"name": "search", "args": {}}]},
            ),
            reply(
                2, "agent", "error", {"content": "", "tool_calls": [{"name": "search", "args": {}}]}
            ),
        ],
        # new input that is only its own earlier reply and a routing label: nothing to
        # act on (a supervisor looping a worker; before, the worker was blamed)
        [
            reply(1, "researcher", "Find the 2023 revenue", DRAFT),
            reply(2, "researcher", f"Find the 2023 revenue\n{DRAFT}\nnext: researcher", DRAFT),
        ],
        # other agents' replies alike are no one's repetition
        [reply(1, "writer", "a", DRAFT), reply(2, "editor", "b", DRAFT)],
    ],
)
def test_what_is_not_an_unheeded_change(events: list[AgentEvent]) -> None:
    run = traj(ev(0, EventType.USER_INPUT, None, input="go"), *events)
    run = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})
    assert not found(run)


def test_a_run_that_succeeded_is_not_read() -> None:
    assert not found(loop(status=OutcomeStatus.SUCCESS))
