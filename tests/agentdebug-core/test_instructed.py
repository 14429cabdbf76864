"""A reviewer's "not 'Sir'" at an interrupt, and a revision that still says "Sir":
blamed on the revision, with a fix that quotes the reviewer."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

DRAFT = "Dear Sir, your follow-up is confirmed for Tuesday 14 May at 10:30."
SAID = "Address her as 'Dr. Okafor', not 'Sir'."


def review_run(answer: str, revised: str, *, shown: str = DRAFT) -> AgentTrajectory:
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input="Confirm Dr. Okafor's follow-up"),
        ev(1, EventType.LLM_RESPONSE, "draft", output=shown),
        ev(
            2,
            EventType.CHECKPOINT,
            "review",
            output=[{"draft": shown}],
            metadata={"langgraph_event": "interrupt"},
        ),
        ev(3, EventType.USER_INPUT, None, input=answer, metadata={"langgraph_event": "resume"}),
        ev(4, EventType.AGENT_END, "review", output={"feedback": answer}),
        ev(5, EventType.LLM_RESPONSE, "revise", output=revised),
        ev(6, EventType.FINAL_ANSWER, "revise", output=revised),
    ]
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "instruction_ignored"]


def test_a_revision_that_keeps_what_the_reviewer_asked_to_drop_is_blamed() -> None:
    run = review_run(SAID, "Dear Sir, we are pleased to confirm your follow-up.")
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.mode_id) == (
        "revise",
        5,
        "coordination.ignored_input",
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("revise", 5)
    assert report.fix is not None and report.fix.directive == (
        f"At step 5, revise: do what the reviewer asked at step 3 ({SAID!r}): 'Sir' is still "
        "in the output. Give the model the reviewer's words, and check the result against "
        "them."
    )


@pytest.mark.parametrize(
    ("answer", "revised", "shown"),
    [
        # done as asked
        (SAID, "Dear Dr. Okafor, your follow-up is confirmed.", DRAFT),
        # a phrase quoted to keep, not to drop
        ("Keep 'Tuesday 14 May' as it is.", "Dear Dr. Okafor, Tuesday 14 May stands.", DRAFT),
        # a phrase the review was not shown (nothing to drop)
        ("Do not write 'Madam'.", "Dear Sir, Madam, your follow-up is confirmed.", DRAFT),
        # "Sir" inside another word is not the word
        (SAID, "Dear Sirius Okafor, your follow-up is confirmed.", DRAFT),
        # (a review's finds) inside the phrase asked for
        ("Write 'Dr. Okafor', not 'Okafor'.", "Dear Dr. Okafor, see you.", "Dear Okafor, hi."),
        # a "no" that answers, not one before the phrase
        ("No, 'Tuesday 14 May' is right.", "Dear Dr. Okafor, Tuesday 14 May.", DRAFT),
        # the reply telling of the change
        (SAID, "Done, with 'Sir' replaced by 'Dr. Okafor':\n\nDear Dr. Okafor, see you.", DRAFT),
    ],
)
def test_what_is_not_an_instruction_ignored(answer: str, revised: str, shown: str) -> None:
    assert not found(review_run(answer, revised, shown=shown))


@pytest.mark.parametrize(
    "answer",
    [
        "Replace 'Sir' with 'Dr. Okafor'.",
        "Change 'Sir' to 'Dr. Okafor'.",
        "Address her as \u2018Dr. Okafor\u2019, not \u2018Sir\u2019.",
        "Address her as 'Dr. Okafor', not 'sir'.",
    ],
)
def test_other_ways_to_ask_to_drop_a_phrase_are_read(answer: str) -> None:
    assert len(found(review_run(answer, "Dear Sir, we are pleased to confirm."))) == 1


def test_the_review_node_passing_a_dict_answer_on_is_not_blamed() -> None:
    answer: Any = {"approved": False, "feedback": SAID}
    run = review_run(SAID, "Dear Dr. Okafor, we are pleased to confirm.")
    events = [e.model_copy(update={"input": answer}) if e.id == "e3" else e for e in run.events]
    assert not found(run.model_copy(update={"events": events}))
