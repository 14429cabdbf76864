"""A tool call given an identifier that nothing in the run had given: the model that
made it up is blamed, not the answer that reported what the call did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.io import import_file
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

ASK = "Please cancel the kettle I ordered yesterday. My email is sam.ortiz@example.com"
PROFILE = '{"customer_id": "C-4410", "name": "Sam Ortiz", "tier": "gold"}'
REASON = "Sam's kettle order is still processing"


def support(
    args: dict[str, Any] | None = None,
    *,
    tool: str = "cancel_order",
    profile: str = PROFILE,
    ask: str = ASK,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    """A support agent: it looks the customer up, then calls ``tool`` with ``args``."""
    args = {"order_id": "ORD-20931"} if args is None else args
    lookup = {"tool_name": "get_customer"}
    call = {"id": "t2", "name": tool, "args": args}
    events = [
        ev(0, EventType.USER_INPUT, None, input=ask),
        ev(1, EventType.LLM_RESPONSE, "agent", input=[{"role": "user", "content": ask}],
           output={"content": "", "tool_calls": [{"id": "t1", "name": "get_customer",
                                                  "args": {"email": "sam.ortiz@example.com"}}]}),
        ev(2, EventType.TOOL_CALL, "agent", input={"email": "sam.ortiz@example.com"},
           metadata=lookup),
        ev(3, EventType.TOOL_RESULT, "tools", output=profile, metadata=lookup),
        ev(4, EventType.LLM_RESPONSE, "agent", input=[{"role": "tool", "content": profile}],
           output={"content": "", "tool_calls": [call]}),
        ev(5, EventType.TOOL_CALL, "agent", input=args, metadata={"tool_name": tool}),
        ev(6, EventType.TOOL_RESULT, "tools", output="done", metadata={"tool_name": tool}),
        ev(7, EventType.LLM_RESPONSE, "agent", input=[{"role": "tool", "content": "done"}],
           output={"content": "Done! Your order is cancelled and refunded."}),
    ]  # fmt: skip
    return traj(*events).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "unsourced_argument"]


def test_the_model_that_made_up_an_id_is_blamed() -> None:
    run = support()
    (finding,) = found(run)
    assert finding.message == (
        "agent called cancel_order with order_id='ORD-20931', which nothing in the run "
        "had given (not the request, nor any tool's result)"
    )
    assert finding.evidence[0].quote == "ORD-20931"
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        4,
        "reflection.hallucinated_fact",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 4, agent: 'ORD-20931' appears nowhere before this call; find the "
        "order_id with a tool that lists them (or ask the user) and call cancel_order "
        "with the value it gives, not an assumed one."
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"profile": PROFILE[:-1] + ', "orders": ["ORD-20931"]}'}, "a tool's result gave it"),
        ({"ask": ASK + " (order 20931)"}, "the user gave its digits"),
        ({"ask": ASK + " Order ord-20931."}, "the user gave it, in other case"),
        ({"status": OutcomeStatus.SUCCESS}, "the run did not fail"),
        ({"tool": "get_order"}, "a read that matters to no named failure"),
        ({"tool": "create_ticket", "args": {"ticket_id": "TKT-1042"}}, "a new id to make"),
        (
            {"args": {"customer_id": "C-4410", "idempotency_key": "req-88123"}},
            "a key minted by design",
        ),
        ({"args": {"order_id": "the kettle"}}, "no identifier"),
        ({"args": {"amount": 18400}}, "a figure, not under an id's key"),
        ({"args": {"amount_paid": 1250, "max_bid": 1500}}, "keys ending in 'id' letters"),
        ({"args": {"path": "img20240611screenshotdesktop01.png"}}, "a file name, read at once"),
        (
            {"profile": '{"message": "Found 1 open order", "order_id": "ORD-20931"}'},
            "a tool's result gave it beside its message",
        ),
        ({"profile": PROFILE + " " + "x" * 150_000 + " ORD-20931"}, "far into a long result"),
        (
            {
                "ask": ASK + " Restore the 2024-06-11 snapshot.",
                "tool": "restore_snapshot",
                "args": {"snapshot_id": "SNAP-20240611"},
            },
            "built of a date the user gave",
        ),
        ({"args": {"client_order_id": "bot-20931"}}, "a client's own order id"),
        (
            {"tool": "schedule_meeting", "args": {"meeting_id": "MTG-20931"}},
            "the new meeting's own id",
        ),
    ],
)
def test_an_id_the_run_gave_or_that_matters_to_nothing_is_no_finding(
    change: dict[str, Any], why: str
) -> None:
    assert found(support(**change)) == [], why


def test_a_read_given_a_made_up_id_is_blamed_when_the_failure_names_it() -> None:
    run = support(tool="get_order", reason="answered about ORD-20931, not Sam's order")
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("agent", 4)


def test_an_id_under_an_id_key_is_read_by_its_digits() -> None:
    """A bare number under ``account_number``, ``orderId``: an identifier too."""
    for args in ({"account_number": "7734102"}, {"orderId": 58213}):
        (finding,) = found(support(args=args, tool="close_account"))
        assert finding.step_index == 4, args


def test_the_reply_that_first_said_the_id_is_blamed() -> None:
    """The model said the id in a reply before the call that used it: that reply is
    where it was made up."""
    run = support()
    said = ev(
        35,
        EventType.LLM_RESPONSE,
        "agent",
        input=[{"role": "tool", "content": PROFILE}],
        output={"content": "Your kettle order is ORD-20931; cancelling it now."},
    )
    events = [*run.events[:4], said, *run.events[4:]]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.event_id == "e35"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("add_note", {"order_id": "ORD-20931"}),  # a maker tool, given another thing's id
        ("create_refund", {"order_id": "ORD-20931"}),
        ("close_account", {"accountNumber": "7734102"}),  # camelCase keys
        ("close_ticket", {"ticket_id": "TKT-2024-0042"}),  # a year elsewhere is not its source
    ],
)
def test_ids_of_things_the_call_acts_on_are_read(tool: str, args: dict[str, Any]) -> None:
    profile = PROFILE[:-1] + ', "since": "2024-03-14"}'
    (finding,) = found(support(args=args, tool=tool, profile=profile))
    assert finding.step_index == 4, (tool, args)


def test_an_id_first_said_in_the_models_reasoning_is_blamed_there() -> None:
    run = support()
    thought = ev(
        36,
        EventType.REASONING,
        "agent",
        output="The kettle is probably ORD-20931; I will cancel that.",
    )
    events = [*run.events[:4], thought, *run.events[4:]]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.event_id == "e36"


def _chat(system: str, tmp_path: Path) -> AgentTrajectory:
    """An OpenAI chat transcript, as imported: no reply event beside a tool call."""
    doc = {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": ASK},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {
                    "name": "get_customer", "arguments": '{"email": "sam.ortiz@example.com"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": PROFILE},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c2", "type": "function", "function": {
                    "name": "cancel_order", "arguments": '{"order_id": "ORD-20931"}'}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "cancelled"},
            {"role": "assistant", "content": "Done! Your kettle order is cancelled."},
        ],
    }  # fmt: skip
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    (imported,) = import_file(path)
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=REASON)  # (as a check would say)
    return imported.trajectory.model_copy(update={"outcome": failed})


def test_a_chat_transcript_s_made_up_id_is_blamed_on_the_call(tmp_path: Path) -> None:
    """An imported transcript records an assistant turn of tool calls alone as the
    calls: the call that first says the id is the model's decision."""
    (finding,) = found(_chat("You are the Brewhaus support agent.", tmp_path))
    assert finding.agent_name == "assistant" and "order_id='ORD-20931'" in finding.message
    # an id the run's own instructions gave is no made-up one
    assert found(_chat("You act for order ORD-20931 only.", tmp_path)) == []


def _deploy(
    uri: str, *, given: str | None, key: str = "artifact_uri", tool: str = "deploy_model"
) -> AgentTrajectory:
    """A model reads a model's evaluation (with its registered artifact, when
    ``given``) and deploys ``uri``."""
    evaluation = {"model": "fraud-detector", "candidate": "8", "gate": "passed"}
    if given is not None:
        evaluation[key] = given
    result = json.dumps(evaluation)
    args = {"model_name": "fraud-detector", "version": "8", key: uri}
    deploy = {"tool_name": tool}
    return traj(
        ev(0, EventType.USER_INPUT, None, input="Ship fraud-detector v8 as a canary."),
        ev(1, EventType.TOOL_RESULT, "tools", output=result, metadata={"tool_name": "get_eval"}),
        ev(2, EventType.LLM_RESPONSE, "agent", input=[{"content": result}],
           output={"tool_calls": [{"name": tool, "args": args}]}),
        ev(2, EventType.TOOL_CALL, "agent", input=args, metadata=deploy),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="v8 never went live: the canary is crash-looping"
    )})  # fmt: skip


REGISTERED = "s3://ml-artifacts-prod/fraud-detector/8/model.onnx"


def test_a_made_up_artifact_address_where_one_was_given_is_blamed() -> None:
    (finding,) = found(_deploy("s3://ml-models/fraud-detector/v8/model.pkl", given=REGISTERED))
    assert (finding.agent_name, finding.step_index) == ("agent", 2)
    assert finding.message.startswith(
        "agent called deploy_model with artifact_uri='s3://ml-models/fraud-detector/v8/"
        "model.pkl', which nothing in the run had given"
    )


@pytest.mark.parametrize(
    "run",
    [
        _deploy(REGISTERED, given=REGISTERED),  # the address given
        # no address given under the key: one the model built (a base and a path)
        _deploy("s3://ml-models/fraud-detector/v8/model.pkl", given=None),
    ],
)
def test_an_address_given_or_built_where_none_was_given_is_no_finding(
    run: AgentTrajectory,
) -> None:
    assert found(run) == []


def test_a_new_object_s_address_a_write_is_given_is_no_made_up_one() -> None:
    """A summary written next to last month's (``write_file(uri=".../june/...")``
    after a listing's ``"uri"``): a destination, which nothing before holds. An
    artifact a create or copy tool reads is still a made-up one."""
    june = "s3://team-reports/june/summary.csv"
    may = "s3://team-reports/may/summary.csv"
    assert found(_deploy(june, given=may, key="uri", tool="write_file")) == []
    assert found(_deploy(june, given=may, key="output_uri", tool="run_report")) == []
    made_up = "s3://ml-models/fraud-detector/v8/model.pkl"
    for tool in ("create_deployment", "copy_object"):
        (finding,) = found(_deploy(made_up, given=REGISTERED, tool=tool))
        assert finding.agent_name == "agent"
