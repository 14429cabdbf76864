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
        "At step 3, post: call post_message with channel='#inc-4411', the value the step "
        "was given, not '#general'."
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


def _loop(
    calls: list[dict[str, Any]], reason: str, *, tool: str = "get_weather", state: Any = None
) -> AgentTrajectory:
    """A tool-loop agent: a model step per call, each call at its model's step; the
    prompt holds the earlier calls (as a message list does), and ``state`` (the
    agent's earlier update) if given."""
    events = [ev(0, EventType.USER_INPUT, None, input="go")]
    meta = {"tool_name": tool}
    asked: list[Any] = []
    if state is not None:
        events.append(ev(1, EventType.AGENT_END, "agent", output=state))
    for i, args in enumerate(calls):
        n = 10 * (i + 1)
        prompt = [{"role": "user", "content": "go"}, *asked]
        events += [
            ev(n, EventType.AGENT_START, "agent"),
            ev(n + 1, EventType.LLM_RESPONSE, "agent", input=prompt,
               output={"tool_calls": [{"name": tool, "args": args}]}),
            ev(n + 2, EventType.TOOL_CALL, "agent", input=args, metadata=meta),
            ev(n + 3, EventType.TOOL_RESULT, "tools", output="ok", metadata=meta),
        ]  # fmt: skip
        events[-4:-1] = [e.model_copy(update={"step_index": n}) for e in events[-4:-1]]
        asked.append({"role": "assistant", "tool_calls": [{"name": tool, "args": args}]})
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    return traj(*events).model_copy(update={"outcome": failed})


@pytest.mark.parametrize(
    ("calls", "reason", "state"),
    [
        # an earlier city asked about, then another: decisions, not data given
        ([{"city": "Paris"}, {"city": "Lyon"}], "the Paris answer was in Fahrenheit", None),
        # recipients one at a time
        (
            [{"to": "ana@acme.example"}, {"to": "raj@acme.example"}],
            "the invoice sent to ana@acme.example had no attachment",
            None,
        ),
        # pages: "500" is no word of "1500"
        ([{"offset": 0}, {"offset": 1000}], "exported 1500 rows of 2000", {"offset": 500}),
        # a turn the user has since changed, held in the state's earlier tool calls
        (
            [{"city": "Munich"}],
            "the Berlin booking's deposit was not refunded",
            {"messages": [{"role": "assistant", "tool_calls": [{"args": {"city": "Berlin"}}]}]},
        ),
    ],
)
def test_earlier_calls_arguments_are_decisions_not_values_given(
    calls: list[dict[str, Any]], reason: str, state: Any
) -> None:
    assert found(_loop(calls, reason, state=state)) == []


def test_a_value_written_with_thousands_groups_is_named_and_huge_numbers_are_skipped() -> None:
    """The failure says "128,000"; the node's input held 128000 (a number), and the
    call sent 12800000, which holds "128000" but is another number."""
    charge = {"tool_name": "charge"}
    events = [
        ev(0, EventType.USER_INPUT, None, input="pay Q-77"),
        ev(1, EventType.AGENT_START, "charge", input={"quote": {"amount_minor": 128000}}),
        ev(2, EventType.TOOL_CALL, "charge", input={"amount_minor": 12800000, "n": 10**50},
           metadata=charge),
    ]  # fmt: skip
    events[1:] = [e.model_copy(update={"step_index": 1}) for e in events[1:]]
    reason = "charged 12,800,000 JPY; finance approved 128,000 JPY"
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    (finding,) = found(traj(*events).model_copy(update={"outcome": failed}))
    assert finding.message == (
        "charge called charge with amount_minor=12800000, though its input at step 1 gave "
        "amount_minor=128000, which the failure names"
    )


def test_a_node_s_start_far_before_its_call_is_still_read() -> None:
    """A node that made 35 lookups before it posted: its start is still read."""
    post = {"tool_name": "post_message"}
    events = [ev(0, EventType.USER_INPUT, None, input="INC-4411")]
    events.append(ev(1, EventType.AGENT_START, "post", input={"inc": INCIDENT}))
    for i in range(35):
        events += [
            ev(
                2 + 2 * i,
                EventType.TOOL_CALL,
                "post",
                input={"k": i},
                metadata={"tool_name": "get"},
            ),
            ev(3 + 2 * i, EventType.TOOL_RESULT, "post", output="x", metadata={"tool_name": "get"}),
        ]
    events.append(ev(80, EventType.TOOL_CALL, "post", input={"channel": "#general"}, metadata=post))
    events[1:] = [e.model_copy(update={"step_index": 1}) for e in events[1:]]
    failed = Outcome(status=OutcomeStatus.FAILURE, reason=REASON)
    (finding,) = found(traj(*events).model_copy(update={"outcome": failed}))
    assert finding.event_id == "e80"


def _paid(hours: Any = 0.0, *, result: str = '{"gross_pay": 2496.0}') -> AgentTrajectory:
    """A payroll agent reads a timesheet (a tool's result as JSON text, as a ToolNode's
    message holds it) and calls ``compute_gross_pay`` with ``overtime_hours=hours``."""
    sheet = '{"employee_id": "EMP-204", "regular_hours": 80.0, "overtime_hours": 6.5}'
    pay = {"tool_name": "compute_gross_pay"}
    args = {"employee_id": "EMP-204", "regular_hours": 80.0, "overtime_hours": hours}
    prompt = [
        {"role": "user", "content": "Pay Dana Ortiz (EMP-204) for 2024-03-01/2024-03-15."},
        {"role": "tool", "content": sheet},
    ]
    events = [
        ev(0, EventType.USER_INPUT, None, input="Pay Dana Ortiz (EMP-204)."),
        ev(1, EventType.TOOL_RESULT, "tools", output=sheet, metadata={"tool_name": "get"}),
        ev(2, EventType.LLM_RESPONSE, "payroll", input=prompt, output={"tool_calls": [args]}),
        ev(3, EventType.TOOL_CALL, "payroll", input=args, metadata=pay),
        ev(4, EventType.TOOL_RESULT, "tools", output=result, metadata=pay, parent_id="e3"),
    ]
    events[3] = events[3].model_copy(update={"step_index": 2})
    reason = "her paycheck came to $2,496.00, but her timesheet works out to $2,800.20"
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def test_a_call_whose_result_the_failure_names_contradicting_a_read_figure_is_blamed() -> None:
    """The timesheet said 6.5 overtime hours, the model passed 0.0, and the tool's
    correct result on that input is the figure the failure names: the call's
    argument, read from a JSON text of the prompt, is where it went wrong."""
    (finding,) = found(_paid())
    assert (finding.agent_name, finding.step_index) == ("payroll", 2)
    assert finding.confidence == 0.45
    assert finding.message == (
        "payroll called compute_gross_pay with overtime_hours=0.0, though its prompt at "
        "step 2 gave overtime_hours=6.5, and the failure names what the call made"
    )


@pytest.mark.parametrize(
    "run",
    [
        _paid(6.5),  # the figure the timesheet gave
        _paid(result='{"gross_pay": 2701.5}'),  # a result the failure does not name
        _paid("six"),  # not a figure
    ],
)
def test_a_call_is_not_blamed_without_a_read_figure_it_contradicts(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_a_refund_over_the_charges_a_json_result_listed_is_blamed() -> None:
    """The charges come as a tool's JSON text; the failure names the charge's 89.99
    and the model refunded 179.98: before, the JSON text was one long string and
    its fields were not read."""
    charges = (
        '{"order_total": 89.99, "charges": [{"charge_id": "ch_1", "amount": 89.99}, '
        '{"charge_id": "ch_2", "amount": 89.99}]}'
    )
    refund = {"tool_name": "refund_order"}
    args = {"order_id": "A-7781", "amount": 179.98}
    prompt = [{"role": "user", "content": "Refund the duplicate charge."}, {"content": charges}]
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="I was charged twice for A-7781."),
        ev(1, EventType.TOOL_RESULT, "tools", output=charges, metadata={"tool_name": "list"}),
        ev(2, EventType.LLM_RESPONSE, "billing", input=prompt, output={"tool_calls": [args]}),
        ev(2, EventType.TOOL_CALL, "billing", input=args, metadata=refund),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="order A-7781 (89.99): we collected 0.00 on it"
    )})  # fmt: skip
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.confidence) == ("billing", 2, 0.55)
    assert "amount=179.98, though its prompt at step 2 gave amount=89.99" in finding.message


def test_a_number_written_another_way_is_the_same_value() -> None:
    """``amount=120.0`` where the JSON result said ``"amount": 120`` is the value given
    (a review found it blamed as overridden)."""
    order = '{"order_id": "A-1", "amount": 120}'
    refund = {"tool_name": "refund_order"}
    args = {"order_id": "A-1", "amount": 120.0}
    run = traj(
        ev(1, EventType.TOOL_RESULT, "tools", output=order, metadata={"tool_name": "get"}),
        ev(2, EventType.LLM_RESPONSE, "support", input=[{"content": order}],
           output={"tool_calls": [args]}),
        ev(2, EventType.TOOL_CALL, "support", input=args, metadata=refund),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="the refund of 120 for A-1 never arrived"
    )})  # fmt: skip
    assert found(run) == []


def test_a_number_the_user_gave_in_words_is_not_overridden() -> None:
    """The account says 25 seats; the user asks for 40; the quote tool's result is
    what the failure names: the 40 was the user's, not a slip."""
    run = _paid(40.0)
    events = [
        e.model_copy(update={"input": "Pay Dana Ortiz (EMP-204): 40 overtime hours, approved."})
        if e.type is EventType.USER_INPUT
        else e
        for e in run.events
    ]
    assert found(run.model_copy(update={"events": events})) == []


def _block(minutes: Any, *, key: str = "max_session_minutes") -> AgentTrajectory:
    """A coach model reads a profile (``"max_session_minutes": 30``, as a ToolNode's
    JSON) and builds a block of sessions with ``key=minutes``."""
    profile = (
        '{"name": "Jonas", "availability": {"days": ["Mon", "Wed"], "max_session_minutes": 30}}'
    )
    args = {"client_id": "C-2291", "weeks": 4, key: minutes}
    build = {"tool_name": "build_training_block"}
    return traj(
        ev(0, EventType.USER_INPUT, None, input="Set up Jonas's next 4-week block."),
        ev(1, EventType.TOOL_RESULT, "tools", output=profile, metadata={"tool_name": "get"}),
        ev(2, EventType.LLM_RESPONSE, "coach", input=[{"content": profile}],
           output={"tool_calls": [args]}),
        ev(2, EventType.TOOL_CALL, "coach", input=args, metadata=build),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="my workouts run 06:30-07:15; I only have half an hour"
    )})  # fmt: skip


@pytest.mark.parametrize("run", [_block(45), _block(30), _block(45, key="session_minutes")])
def test_a_limit_s_key_alone_names_no_overridden_value(run: AgentTrajectory) -> None:
    """A call above a ``max_*`` its step was given, the failure naming neither: not
    read (tried and taken back: a plan the user upgraded, a room's ``floor``, a
    meeting's ``duration_min`` and a pagination ``limit`` read as limits broken)."""
    assert found(run) == []


def test_a_grouped_number_the_user_gave_is_theirs() -> None:
    """ "Raise it to $1,500" gives 1500, not 1 and 500."""
    run = _paid(1500.0)
    events = [
        e.model_copy(update={"input": "Pay Dana: raise her overtime to 1,500 hours, approved."})
        if e.type is EventType.USER_INPUT
        else e
        for e in run.events
    ]
    assert found(run.model_copy(update={"events": events})) == []


def test_a_code_that_lost_its_leading_zero_is_not_the_code_given() -> None:
    """A postcode ``02139`` sent as ``2139`` (an int on the way): another value, not the
    same number written another way."""
    given = {"inc": {"postcode": "02139", "city": "Cambridge"}}
    run = posted({"postcode": "2139", "text": "Your parcel"}, given=given,
                 reason="the parcel went to postcode 2139, not 02139")  # fmt: skip
    (finding,) = found(run)
    assert "postcode='2139'" in finding.message or "postcode=2139" in finding.message
