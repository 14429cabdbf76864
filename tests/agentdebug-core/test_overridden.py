"""A call given another value for a key than its step was given, when the failure
names the value given: the step that made the call is blamed."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

INCIDENT = {"id": "INC-4411", "severity": "SEV2", "channel": "#inc-4411"}
REASON = "the status update was posted to ['#general'], not to the incident channel #inc-4411"


def posted(
    args: dict[str, Any] | None = None,
    *,
    given: Any = None,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
    by_model: bool = False,
) -> AgentTrajectory:
    """fetch -> summarize -> post: the post node calls ``post_message(args)``; by a
    model (whose prompt holds the incident) with ``by_model``, else by its own code."""
    args = {"channel": "#general", "text": "SEV2 mitigated."} if args is None else args
    given = {"inc": INCIDENT} if given is None else given
    post = {"tool_name": "post_message"}
    events = [
        ev(0, EventType.USER_INPUT, None, input="INC-4411"),
        ev(1, EventType.TOOL_RESULT, "fetch", output=INCIDENT, metadata={"tool_name": "get"}),
        ev(2, EventType.LLM_RESPONSE, "summarize", input=[{"role": "user", "content": str(given)}],
           output={"content": "SEV2 mitigated: checkout latency back under 400 ms."}),
        ev(3, EventType.AGENT_START, "post", input=None if by_model else given),
    ]  # fmt: skip
    if by_model:
        prompt = [{"role": "user", "content": "Post this update."}, {"role": "user", **given}]
        events.append(
            ev(4, EventType.LLM_RESPONSE, "post", input=prompt, output={"tool_calls": [args]})
        )
    events += [
        ev(5, EventType.TOOL_CALL, "post", input=args, metadata=post),
        ev(6, EventType.TOOL_RESULT, "post", output="posted to #general", metadata=post),
    ]
    events[3:] = [e.model_copy(update={"step_index": 3}) for e in events[3:]]  # (post's step)
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "given_value_overridden"]


def test_a_node_that_posted_elsewhere_than_its_input_said_is_blamed() -> None:
    run = posted()
    (finding,) = found(run)
    assert finding.message == (
        "post called post_message with channel='#general', though its input at step 3 "
        "gave channel='#inc-4411', which the failure names"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("post", 3, "memory.context_loss")
    assert [e.quote for e in root.evidence] == ["#inc-4411", "#general"]
    assert all(e.grounded for e in root.evidence)
    assert report.fix is not None and report.fix.directive == (
        "At step 3, post: call post_message with the channel the step was given "
        "('#inc-4411'), not '#general'."
    )


def test_a_model_that_called_with_another_value_than_its_prompt_gave_is_blamed() -> None:
    (finding,) = found(posted(by_model=True))
    assert finding.event_id == "e4" and "though its prompt at step 3" in finding.message


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"reason": "the update was posted too late"}, "the failure names no value given"),
        ({"status": OutcomeStatus.SUCCESS}, "the run did not fail"),
        ({"args": {"channel": "#inc-4411", "text": "x"}}, "the value given"),
        ({"args": {"channel": "#general", "cc": "#inc-4411"}}, "the call holds it elsewhere"),
        (
            {"args": {"id": "INC-1", "text": "x"}, "reason": "wrong incident, not INC-4411"},
            "a key every object has",
        ),
        ({"given": {"inc": {**INCIDENT, "channel": "#a"}}, "reason": "not in #a"}, "too short"),
    ],
)
def test_no_finding(change: dict[str, Any], why: str) -> None:
    assert found(posted(**change)) == [], why


def test_a_graph_node_that_records_no_input_was_given_the_state_before_it() -> None:
    """A StateGraph node's start records no input: it read the state, which the
    nodes before it wrote (the latest value of each key)."""
    post = {"tool_name": "post_message"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="INC-4411"),
        ev(1, EventType.AGENT_END, "fetch", output={"inc": {**INCIDENT, "channel": "#old"}}),
        ev(2, EventType.AGENT_END, "triage", output={"inc": INCIDENT}),
        ev(3, EventType.AGENT_START, "post"),
        ev(4, EventType.TOOL_CALL, "post", input={"channel": "#general"}, metadata=post),
    ).model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=REASON)})
    run = run.model_copy(
        update={
            "events": [
                *run.events[:3],
                *(e.model_copy(update={"step_index": 3}) for e in run.events[3:]),
            ]
        }
    )
    (finding,) = found(run)
    assert finding.message == (
        "post called post_message with channel='#general', though the state (triage's "
        "update at step 2) gave channel='#inc-4411', which the failure names"
    )
    assert finding.evidence[0].field == "output"


def test_a_call_for_one_item_of_a_list_it_was_given_is_no_finding() -> None:
    """A node sending each draft in turn: its first call's "to" is the first
    draft's, not the last's (before the fix, the state's last value of a key was
    taken for the one the node was given)."""
    drafts = {"drafts": [{"to": "sunny@cafe.example"}, {"to": "office@bluefin.example"}]}
    send = {"tool_name": "send_email"}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="outreach"),
        ev(1, EventType.AGENT_END, "draft", output=drafts),
        ev(2, EventType.AGENT_START, "send"),
        ev(3, EventType.TOOL_CALL, "send", input={"to": "sunny@cafe.example"}, metadata=send),
    )
    events = [*run.events[:2], *(e.model_copy(update={"step_index": 2}) for e in run.events[2:])]
    reason = "outreach went to sunny@cafe.example and office@bluefin.example, the worst leads"
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    assert found(run.model_copy(update={"events": events, "outcome": failed})) == []


def test_values_parallel_branches_wrote_to_one_key_are_all_given() -> None:
    """Three ``Send`` branches each wrote their market's locale; a reducer kept them
    all, so the node that queues a push for each was given each (before, only the
    last writer's, and its first call was said to override it)."""
    push = {"tool_name": "queue_push"}
    events = [ev(0, EventType.USER_INPUT, None, input="campaign")]
    events += [
        ev(i, EventType.AGENT_END, "localize", output={"pushes": [{"locale": loc}]})
        for i, loc in ((1, "de-DE"), (2, "ja-JP"), (3, "pt-BR"))
    ]
    events += [
        ev(4, EventType.AGENT_START, "schedule"),
        ev(5, EventType.TOOL_CALL, "schedule", input={"locale": "de-DE"}, metadata=push),
    ]
    events[4:] = [e.model_copy(update={"step_index": 4}) for e in events[4:]]
    reason = "the push goes out at de-DE 11:00, pt-BR 06:00 local; it was to be 09:00 local"
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    assert found(traj(*events).model_copy(update={"outcome": failed})) == []
