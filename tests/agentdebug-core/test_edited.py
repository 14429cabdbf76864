"""A reviewer's edit at an interrupt, and a node after it using the text as it was
before the edit (the LangGraph plugin's interrupt and resume events)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

DRAFT = "Hi Sam, the renewal is at $48,000/yr, effective 1 June. Best, Alex"
EDITED = "Hi Sam, the renewal is at $42,000/yr (as agreed), effective 1 June. Best, Alex"


def run_of(
    *after: AgentEvent,
    answer: Any = None,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    events = [
        ev(0, EventType.USER_INPUT, None, input="write Sam about the renewal"),
        ev(1, EventType.AGENT_END, "draft", output={"draft": DRAFT}),
        ev(
            2,
            EventType.CHECKPOINT,
            "review",
            output=[{"question": "Approve or edit the e-mail", "draft": DRAFT, "alt": EDITED}]
            if isinstance(answer, dict) and "choice" in answer
            else [{"question": "Approve or edit the e-mail", "draft": DRAFT}],
            metadata={"langgraph_event": "interrupt"},
        ),
        ev(
            3,
            EventType.USER_INPUT,
            None,
            input={"action": "edit", "text": EDITED} if answer is None else answer,
            metadata={"langgraph_event": "resume"},
        ),
        ev(4, EventType.AGENT_END, "review", output={"final_text": EDITED}),
        *after,
    ]
    return traj(*events).model_copy(update={"outcome": Outcome(status=status)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "edit_ignored"]


def test_a_node_that_sends_the_text_from_before_the_edit_is_blamed() -> None:
    run = run_of(ev(5, EventType.AGENT_END, "send", output={"sent": DRAFT}))
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.mode_id) == (
        "send",
        5,
        "coordination.ignored_input",
    )
    report = diagnose(run)
    assert report.root_cause is not None and report.root_cause.agent_name == "send"
    assert report.fix is not None and report.fix.directive.startswith(
        f"At step 5, send: use the text as the reviewer edited it at step 3 ('{EDITED}')"
    )


def test_a_heavy_rewrite_is_an_edit_too() -> None:
    # (0.54 alike the draft: under the 0.6 asked before a probe's rewrite was missed)
    rewrite = (
        "Sam, renewal update: $42,000 per year starting June 1 (our agreed discount). Regards, Alex"
    )
    run = run_of(
        ev(5, EventType.AGENT_END, "send", output={"sent": DRAFT}),
        answer={"action": "edit", "text": rewrite},
    )
    assert [f.agent_name for f in found(run)] == ["send"]


def test_a_tool_call_given_the_text_from_before_the_edit_is_blamed() -> None:
    call = ev(5, EventType.TOOL_CALL, "mailer", input={"to": "sam", "body": DRAFT})
    (finding,) = found(run_of(call))
    assert finding.event_id == "e5"


@pytest.mark.parametrize(
    ("after", "answer"),
    [
        # the node used the edit
        ([ev(5, EventType.AGENT_END, "send", output={"sent": EDITED})], None),
        # approved as it was: no edit to ignore
        ([ev(5, EventType.AGENT_END, "send", output={"sent": DRAFT})], {"action": "approve"}),
        # an answer unlike anything shown is no edit of it
        (
            [ev(5, EventType.AGENT_END, "send", output={"sent": DRAFT})],
            {"action": "note", "text": "Please call me about this tomorrow morning."},
        ),
        # a node holding both (a log of the review) did not lose the edit
        ([ev(5, EventType.AGENT_END, "log", output={"was": DRAFT, "now": EDITED})], None),
        # a tool's paused call run again to resume: the model's own arguments (the
        # edit goes in through the interrupt's answer inside the tool)
        (
            [
                ev(
                    1,
                    EventType.TOOL_CALL,
                    "agent",
                    input={"body": DRAFT},
                    metadata={"tool_name": "send_email", "resumes": "e9"},
                )
            ],
            None,
        ),
        # the answer is one of the texts shown: a choice, not an edit of another
        (
            [ev(5, EventType.AGENT_END, "archive", output={"archived": [DRAFT]})],
            {"choice": EDITED},
        ),
    ],
)
def test_what_is_not_an_ignored_edit(after: list[AgentEvent], answer: Any) -> None:
    assert not found(run_of(*after, answer=answer))


def test_a_run_that_succeeded_is_not_read() -> None:
    sent = ev(5, EventType.AGENT_END, "send", output={"sent": DRAFT})
    assert not found(run_of(sent, status=OutcomeStatus.SUCCESS))
