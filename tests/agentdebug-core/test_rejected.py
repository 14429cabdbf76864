"""A reviewer's plain rejection at an interrupt, and the declined action after it
(the LangGraph plugin's interrupt and resume events; graphs in the plugin's tests)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.detect.rejected import rejection
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj


@pytest.mark.parametrize(
    "answer",
    [
        False,
        "no",
        "No.",
        " reject ",
        "denied",
        "Don't",
        ["no"],
        {"approved": False},
        {"type": "reject"},
        {"decisions": [{"type": "reject"}]},
        # a rejection and its reason, with no alternative to act on
        "No - policy says repair first, do not refund.",
        "Rejected: the customer is not eligible.",
        "no because it is a duplicate request",
    ],
)
def test_plain_rejections(answer: Any) -> None:
    assert rejection(answer)


@pytest.mark.parametrize(
    "answer",
    [
        True,
        None,
        "yes",
        "no, refund $40 instead",
        "No - but send the partial refund.",
        "No, use the store credit.",
        "Nothing to change, go ahead.",
        "not now, ask me tomorrow",
        {"approved": True},
        {"approved": False, "note": "refund $40 instead"},
        {"type": "reject", "message": "use order B7"},
        {"type": "edit", "args": {"amount": 40}},
        {"decisions": [{"type": "approve"}]},
        {"decisions": []},
    ],
)
def test_answers_that_are_not_a_plain_rejection(answer: Any) -> None:
    assert not rejection(answer)


def run_of(
    *after: AgentEvent, answer: Any = "no", question: str = "Issue a refund of $42?"
) -> AgentTrajectory:
    events = [
        ev(0, EventType.USER_INPUT, None, input="refund A123"),
        ev(1, EventType.AGENT_START, "review"),
        ev(
            2,
            EventType.CHECKPOINT,
            "review",
            output=[{"question": question}],
            metadata={"langgraph_event": "interrupt"},
        ),
        ev(3, EventType.USER_INPUT, None, input=answer, metadata={"langgraph_event": "resume"}),
        ev(4, EventType.AGENT_START, "review"),
        ev(5, EventType.AGENT_END, "review", output={"goto": "refund"}),
        *after,
    ]
    run = traj(*events)
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "rejection_overruled"]


def test_the_declined_node_after_a_no_is_blamed_on_the_node_that_routed() -> None:
    (finding,) = found(run_of(ev(6, EventType.AGENT_START, "issue_refund")))
    assert (finding.event_id, finding.agent_name, finding.step_index) == ("e5", "review", 5)
    assert finding.message == (
        "the reviewer answered 'no' to 'Issue a refund of $42?' at step 3, and the run ran "
        "issue_refund at step 6"
    )


def test_the_declined_tool_called_after_a_no_is_blamed_on_the_call() -> None:
    call = ev(7, EventType.TOOL_CALL, "agent", metadata={"tool_name": "refund"})
    (finding,) = found(run_of(ev(6, EventType.LLM_RESPONSE, "agent"), call))
    assert finding.event_id == "e7"


def test_the_declined_call_run_after_a_no_is_blamed_on_the_node_that_let_it_through() -> None:
    # (a gate routing "if answer:" to a ToolNode: the call the model asked before the
    # question runs after the answer, filed under its asker's earlier step)
    call = ev(1, EventType.TOOL_CALL, "agent", metadata={"tool_name": "refund"})
    (finding,) = found(run_of(call))
    assert (finding.event_id, finding.agent_name) == ("e5", "review")
    assert finding.message.endswith("and the run ran the declined refund call (asked at step 1)")


@pytest.mark.parametrize(
    ("question", "action"),
    [
        ("Cancel the subscription for user 881?", "cancel_subscription"),
        ("Stop server prod-3?", "stop_server"),
        ("Delete any files older than 30 days?", "delete_files"),
        ("Skip the payment step and ship now?", "skip_payment"),
        ("Should I stop the deployment?", "stop_deployment"),
        # the thing done named, its tool's "do it" verb not (a held-out probe's miss)
        ("Manager: approve the refund proposed above?", "issue_refund"),
        ("Approve the payment of $90?", "process_payment"),
    ],
)
def test_a_no_to_a_destructive_action_is_read(question: str, action: str) -> None:
    """Before the review, any question holding "cancel", "stop", "skip" or "any"
    was taken for one whose "no" goes ahead, and not read."""
    call = ev(6, EventType.TOOL_CALL, "agent", metadata={"tool_name": action})
    assert len(found(run_of(call, question=question))) == 1


def test_a_question_whose_no_goes_ahead_or_a_run_that_succeeded_is_not_read() -> None:
    refund = ev(6, EventType.AGENT_START, "refund")
    assert not found(run_of(refund, question="Any changes before I issue the refund of $42?"))
    assert not found(run_of(refund, question="Should I cancel the refund of $42 instead?"))
    assert not found(run_of(refund, question="Anything else before I issue the refund?"))
    assert not found(run_of(refund, question="Should I wait before I issue the refund?"))
    ok = run_of(refund).model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert not found(ok)


def test_a_middleware_s_listed_action_is_matched_by_its_name_alone() -> None:
    """``HumanInTheLoopMiddleware`` lists the calls it asks about, with their
    arguments: a tool whose name's words are in those arguments is not the one
    declined (before, a lookup of "order_status" after a rejected e-mail about the
    order's status was blamed)."""
    asked = [
        {
            "action_requests": [
                {"name": "send_email", "args": {"subject": "Order status"}, "description": "x"}
            ]
        }
    ]
    rejected = {"decisions": [{"type": "reject"}]}
    other = ev(6, EventType.TOOL_CALL, "model", metadata={"tool_name": "order_status"})
    assert not found(_asked(asked, rejected, other))
    again = ev(6, EventType.TOOL_CALL, "model", metadata={"tool_name": "send_email"})
    (finding,) = found(_asked(asked, rejected, again))
    assert finding.event_id == "e6"


def _asked(value: Any, answer: Any, *after: AgentEvent) -> AgentTrajectory:
    run = run_of(*after, answer=answer)
    events = [e.model_copy(update={"output": value}) if e.id == "e2" else e for e in run.events]
    return run.model_copy(update={"events": events})


@pytest.mark.parametrize(
    "after",
    [
        # what ran is not what was asked about
        [ev(6, EventType.AGENT_START, "notify_customer")],
        # one word of the name in the question is not enough ("issue" of "Issue a
        # refund" in report_issue)
        [ev(6, EventType.AGENT_START, "report_issue")],
        # a first word that is more than "do it" is still needed ("refund" in
        # "Issue a refund" is not cancel_refund)
        [ev(6, EventType.TOOL_CALL, "agent", metadata={"tool_name": "cancel_refund"})],
        # a new question first: what follows answers that one
        [
            ev(
                6,
                EventType.CHECKPOINT,
                "review",
                output=["Refund $40 then?"],
                metadata={"langgraph_event": "interrupt"},
            ),
            ev(7, EventType.AGENT_START, "refund"),
        ],
        # the answer a node wrote for the declined call without running it (its
        # rejection's own record, filed under the call's asker)
        [
            ev(
                1,
                EventType.TOOL_CALL,
                "agent",
                metadata={"tool_name": "refund", "recorded_from": "node_update"},
            )
        ],
        # the paused call run again to resume it
        [ev(6, EventType.TOOL_CALL, "agent", metadata={"tool_name": "refund", "resumes": "e1"})],
    ],
)
def test_what_is_not_the_declined_action(after: list[AgentEvent]) -> None:
    assert not found(run_of(*after))


def test_an_approval_or_an_edit_is_not_overruled() -> None:
    assert not found(run_of(ev(6, EventType.AGENT_START, "refund"), answer="yes"))
    assert not found(
        run_of(ev(6, EventType.AGENT_START, "refund"), answer="no, refund $40 instead")
    )


@pytest.mark.parametrize(
    ("question", "action", "tool"),
    [
        # a "no" to undoing or putting off the thing keeps it: doing it is no overrule
        ("Cancel the payment for order 17?", "process_payment", True),
        ("Hold the refund until the item is back?", "issue_refund", True),
        ("Reverse the trade from this morning?", "execute_trade", True),
        # a node whose first word says "do it" is named in full (an answer's handler)
        ("Review needed: refund $42 for order 17?", "handle_review", False),
    ],
)
def test_a_do_it_verb_is_left_out_only_for_a_tool_asked_to_be_done(
    question: str, action: str, tool: bool
) -> None:
    """A review's finds: "no" to "Cancel the payment?" then process_payment was read
    as the reviewer overruled."""
    if tool:
        after = ev(6, EventType.TOOL_CALL, "agent", metadata={"tool_name": action})
    else:
        after = ev(6, EventType.AGENT_START, action)
    assert not found(run_of(after, question=question))


def _recorded_no_then(update: dict[str, Any]) -> AgentTrajectory:
    """The reviewer node writes the "no" down as ``approved: False``; a plain edge
    then runs ``refund``, whose update is ``update``."""
    run = run_of(
        ev(6, EventType.AGENT_START, "refund").model_copy(update={"id": "s6"}),
        ev(7, EventType.AGENT_END, "refund", output=update, parent_id="s6"),
    )
    events = list(run.events)
    events[5] = events[5].model_copy(update={"output": {"approved": False}})
    return run.model_copy(update={"events": events})


def test_a_node_that_honoured_a_recorded_no_is_not_an_overruling() -> None:
    """review stored approved=False, and refund, run by a plain edge, said it did
    nothing: the graph did what the answer said."""
    for said in ("not refunded: the reviewer declined", "refund skipped", "status: rejected"):
        assert found(_recorded_no_then({"status": said})) == []
    # nothing written, or a draft kept: nothing done (a review found these blamed)
    for update in ({}, {"status": "kept as draft"}, {"refund": None}):
        assert found(_recorded_no_then(update)) == []


def test_a_node_that_acted_despite_a_recorded_no_is_blamed_itself() -> None:
    """The no was written down right; the node that ran anyway is at fault, not review."""
    (finding,) = found(_recorded_no_then({"status": "refunded $42"}))
    assert (finding.agent_name, finding.step_index) == ("refund", 7)
    assert "written down as a rejection" in finding.message
    # a "no" elsewhere in the update is not the thing undone (before, any negation
    # anywhere silenced the rule)
    for update in (
        {"status": "refunded", "log": "no errors"},
        {"note": "No surprises", "status": "refunded"},
        {"status": "refunded; the customer was not notified"},
    ):
        assert len(found(_recorded_no_then(update))) == 1, update
