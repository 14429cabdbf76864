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


FINDINGS = "Findings: the EU AI Act entered into force on 1 Aug 2024."
LIMIT = "GraphRecursionError: Recursion limit of 9 reached without hitting a stop condition."


def supervised(labels: list[str], *, ended: str = LIMIT) -> AgentTrajectory:
    """A supervisor's model routing by a label, its researcher answering in between,
    the run stopped by ``ended`` (an error event at the last step)."""
    events = [ev(0, EventType.USER_INPUT, None, input="Brief me on the EU AI Act.")]
    given = "Brief me on the EU AI Act."
    for n, label in enumerate(labels, 1):
        events.append(reply(len(events), "supervisor", given, label))
        if n < len(labels):
            events.append(reply(len(events), "researcher", label, FINDINGS))
            given = f"{label}\n{FINDINGS}"
    events.append(ev(len(events), EventType.ERROR, "supervisor", error=ended))
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})


def test_a_supervisor_routing_back_until_the_limit_is_blamed_at_its_first_repeat() -> None:
    """Before: the step limit was blamed, at the last step, with a fix to "cut
    unproductive steps"; the fault is the first time the supervisor sent the work
    back though the findings were in."""
    run = supervised(["next: researcher"] * 4)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.mode_id) == (
        "supervisor",
        3,
        "coordination.wrong_delegation",
    )
    assert finding.message == (
        "supervisor's model gave the same reply ('next: researcher') at step 3 as at step 1, "
        "4 times in a row until the run's step limit, though what it was given had changed "
        f"(now: {FINDINGS!r})"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("supervisor", 3)
    assert report.fix is not None and report.fix.directive == (
        f"At step 3, supervisor: the reply repeated 'next: researcher' (as at step 1), though "
        f"{FINDINGS!r} had come in, and the run looped on it until its step limit. Route on "
        "what came back: to the next step, or to the end, not to the same one again."
    )


@pytest.mark.parametrize(
    ("labels", "ended"),
    [
        # a label given again is by design where the run did not stop at its limit
        (["next: researcher"] * 4, "ValueError: no briefing"),
        # twice is not a loop
        (["next: researcher"] * 2, LIMIT),
        # the loop was left before the limit: something else used the steps up
        (["next: researcher"] * 3 + ["next: writer"], LIMIT),
    ],
)
def test_a_label_given_again_is_not_a_loop_unless_it_ran_to_the_limit(
    labels: list[str], ended: str
) -> None:
    assert not found(supervised(labels, ended=ended))
