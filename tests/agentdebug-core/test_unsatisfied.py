"""A critic that rejected every revised draft until the recursion limit: its first
rejection is blamed, not its last call at the limit, nor the writer who revised."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

DRAFTS = [
    "Cold rain on tin roofs / maple leaves drift down the drain / the streetlights blur gold",
    "Cold rain drums on tin roofs / red maple leaves drift down the drain / lights blur gold",
    "Cold rain drums on the tin roofs / red leaves drift so slowly down / lights blur to gold",
    "Cold autumn rain drums on roofs / red maple leaves drift down the old drain / gold",
]
VERDICTS = [
    "REVISE: not 5-7-5. Line 2 has 6 words but needs 7.",
    "REVISE: line 1 has 6 words, needs 5.",
    "REVISE: line 1 has 6 words, line 2 has 9 words.",
    "REVISE: line 1 has 7 words, line 2 has 11 words.",
]
LIMIT = "GraphRecursionError: Recursion limit of 8 reached without hitting a stop condition"


def loop(
    drafts: list[str] = DRAFTS,
    verdicts: list[str] = VERDICTS,
    *,
    error: str | None = LIMIT,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input="a haiku about rain")]
    for draft, verdict in zip(drafts, verdicts, strict=True):
        n = len(events)
        events.append(ev(n, EventType.LLM_RESPONSE, "write", output={"content": draft}))
        events.append(ev(n + 1, EventType.LLM_RESPONSE, "critique", output={"content": verdict}))
    if error is not None:
        events.append(ev(len(events), EventType.ERROR, "critique", error=error))
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=status)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "critic_never_satisfied"]


def test_the_critics_first_rejection_of_drafts_revised_each_time_is_blamed() -> None:
    run = loop()
    (finding,) = found(run)
    assert finding.message == (
        "critique rejected all 4 drafts write wrote, each revised after the critique before, "
        f"until the step limit; its first rejection: {VERDICTS[0]!r}"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "critique",
        2,
        "verification.incorrect_verification",
    )
    assert report.fix is not None and report.fix.directive.startswith(
        f"At step 2, critique: it rejected the first draft ({VERDICTS[0]!r}) and every revision"
    )


@pytest.mark.parametrize(
    "run",
    [
        # the writer sent a draft again: the writer's fault (reply_unchanged)
        loop([DRAFTS[0], DRAFTS[1], DRAFTS[1], DRAFTS[2]]),
        # the critic's verdicts differ (it approved one, the route ignored it)
        loop(verdicts=[*VERDICTS[:3], "APPROVED: a fine haiku."]),
        loop(verdicts=["APPROVED.", "APPROVED.", "APPROVED.", "APPROVED."]),
        # not stopped by the step limit
        loop(error=None),
        # two rounds are not a loop
        loop(DRAFTS[:2], VERDICTS[:2]),
        # a run that succeeded
        loop(status=OutcomeStatus.SUCCESS),
        # the critic approves in words the route did not read: the route's fault
        loop(verdicts=[f"Looks good: no changes needed ({n})." for n in range(4)]),
        loop(verdicts=[f"Excellent work {n}; this meets the brief. Approved." for n in range(4)]),
        # the same critique each round: the writer did not act on it
        loop(verdicts=["REVISE: this haiku is about summer, not autumn rain."] * 4),
        # a supervisor routing back to its worker: labels, not verdicts
        loop(verdicts=["next: researcher"] * 4),
        loop(verdicts=[f"Route to researcher {n}" for n in range(4)]),
    ],
)
def test_not_a_critic_never_satisfied(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_the_critic_is_told_by_its_verdicts_not_by_who_spoke_last() -> None:
    """A limit that stops the run after the writer's turn: the critic is the agent
    whose every reply rejects, not the last to speak (the writer's drafts all open
    alike, "Here's the revised haiku")."""
    drafts = [f"Here's the revised haiku: {d}" for d in DRAFTS]
    run = loop(drafts, VERDICTS)
    events = [e for e in run.events if e.type is not EventType.ERROR]
    last = len(events)
    events.append(ev(last, EventType.LLM_RESPONSE, "write", output={"content": "Here's v5"}))
    events.append(ev(last + 1, EventType.ERROR, "write", error=LIMIT))
    run = traj(*events).model_copy(update={"outcome": run.outcome})
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("critique", 2)


def test_verdicts_in_any_case_and_a_tool_call_before_each_are_read() -> None:
    verdicts = [
        "REVISE: line 2 is short.",
        "Revise: line 1 is long now.",
        "revise: line 3 is too short.",
    ]
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input="a haiku")]
    for draft, verdict in zip(DRAFTS, [*verdicts, "REVISE: still wrong, line 2."], strict=True):
        n = len(events)
        events.append(ev(n, EventType.LLM_RESPONSE, "write", output={"content": draft}))
        call = {"role": "assistant", "content": "", "tool_calls": [{"name": "count_words"}]}
        events.append(ev(n + 1, EventType.LLM_RESPONSE, "critique", output=call))
        events.append(ev(n + 2, EventType.LLM_RESPONSE, "critique", output={"content": verdict}))
    events.append(ev(len(events), EventType.ERROR, "critique", error=LIMIT))
    run = traj(*events).model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("critique", 3)
