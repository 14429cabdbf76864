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
    ],
)
def test_not_a_critic_never_satisfied(run: AgentTrajectory) -> None:
    assert found(run) == []
