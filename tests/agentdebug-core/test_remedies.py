"""The fix a report gives without a model is the blamed mode's remedy, made concrete:
when the blamed step is a tool call that failed, it says which call, with what
arguments, and how it failed, so that a rerun's directive (and a reader) has
something to act on. Before, it was the remedy alone ("Call the tool again with
arguments that match its schema exactly."), the same for every run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.io import import_paths
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)

BOOKING = Path(__file__).parents[2] / "examples" / "failed_booking.json"


def test_the_fix_names_the_failing_call_its_arguments_and_its_error() -> None:
    run = import_paths([BOOKING]).runs[0].trajectory  # (its results link to no call)
    report = diagnose(run)
    assert report.fix is not None
    assert report.fix.directive == (
        'At step 3, searcher: search_fares({"date":"14/12/2026","destination":"DEN",'
        '"nonstop":true,"origin":"BOS"}) failed: "ValidationError: date must be YYYY-MM-DD, '
        "got '14/12/2026'\". The agent made the same call 2 more times after it failed. "
        "Call the tool again with arguments that match its schema exactly."
    )


def event(i: int, kind: EventType, **fields: Any) -> AgentEvent:
    return AgentEvent(id=f"e{i}", type=kind, step_index=fields.pop("step", i), **fields)


def parallel_lookups(second_fails: bool) -> AgentTrajectory:
    """Two calls of one tool in one step, linked to their results by call id; the
    results come back in the other order."""
    meta = {"tool_name": "lookup_order"}
    return AgentTrajectory(
        id="parallel",
        goal="refund orders A1 and B2",
        framework="test",
        events=[
            event(0, EventType.USER_INPUT, input="refund orders A1 and B2"),
            event(
                1,
                EventType.TOOL_CALL,
                agent_name="agent",
                input={"order_id": "A1"},
                metadata={**meta, "tool_call_id": "c1"},
            ),
            event(
                2,
                EventType.TOOL_CALL,
                agent_name="agent",
                step=1,
                input={"order_id": "b-2"},
                metadata={**meta, "tool_call_id": "c2"},
            ),
            event(
                3,
                EventType.TOOL_RESULT,
                agent_name="tools",
                step=2,
                metadata={**meta, "tool_call_id": "c2"},
                output=None if second_fails else "order b-2: $5",
                error=ErrorInfo(type="KeyError", message="no order 'b-2'")
                if second_fails
                else None,
            ),
            event(
                4,
                EventType.TOOL_RESULT,
                agent_name="tools",
                step=2,
                metadata={**meta, "tool_call_id": "c1"},
                output="order A1: $42",
            ),
            event(
                5,
                EventType.FINAL_ANSWER,
                agent_name="agent",
                step=3,
                output="Both orders are refunded.",
            ),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="B2 was not refunded"),
    )


def test_among_parallel_calls_of_one_tool_the_fix_names_the_one_that_failed() -> None:
    report = diagnose(parallel_lookups(second_fails=True))
    root = report.root_cause
    assert root is not None and report.fix is not None
    assert 'lookup_order({"order_id":"b-2"}) failed: "KeyError: no order \'b-2\'"' in (
        report.fix.directive
    )
    assert "A1" not in report.fix.directive


def test_a_call_recorded_again_on_a_resume_is_named_once_in_the_fix() -> None:
    """A tool paused by an interrupt and run again on the resume is one call (its
    id), recorded twice: the fix names its failure once (before: "X failed; at the
    same step, X failed")."""
    meta = {"tool_name": "refund", "tool_call_id": "c1"}
    said = ErrorInfo(type="PermissionError", message="refund of B2 not approved")
    run = AgentTrajectory(
        id="resumed",
        goal="refund B2",
        framework="test",
        events=[
            event(0, EventType.USER_INPUT, input="refund B2"),
            event(1, EventType.TOOL_CALL, agent_name="model", input={"order": "B2"}, metadata=meta),
            event(2, EventType.USER_INPUT, input="no", metadata={"langgraph_event": "resume"}),
            event(
                3,
                EventType.TOOL_CALL,
                agent_name="model",
                step=1,
                input={"order": "B2"},
                metadata=meta,
            ),
            event(
                4,
                EventType.TOOL_RESULT,
                agent_name="tools",
                parent_id="e3",
                metadata=meta,
                error=said,
            ),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="not refunded"),
    )
    report = diagnose(run)
    assert report.fix is not None
    assert report.fix.directive.count("refund of B2 not approved") == 1, report.fix.directive
    assert "at the same step" not in report.fix.directive


def test_a_blamed_call_that_did_not_fail_gets_the_remedy_alone() -> None:
    from agentdebug.plugins import get_registry
    from agentdebug.remedies import fix_of
    from agentdebug.schema import Hypothesis

    reg = get_registry()
    root = Hypothesis(
        agent_name="agent",
        step_index=1,
        event_id="e2",  # the call for b-2, which answered
        strategy="test",
        confidence=0.5,
        rationale="looked up the wrong order",
        mode_id="action.wrong_tool",
    )
    fix = fix_of(root, reg, parallel_lookups(second_fails=False), "agent")
    assert fix is not None
    assert fix.directive == f"At step 1, agent: {reg.failure_modes['action.wrong_tool'].remedy}"


def tool_loop(
    tool: str, args: dict[str, Any], results: list[str | ErrorInfo], **run: Any
) -> AgentTrajectory:
    """LangGraph's agent and tools nodes in a loop: each model reply asks for the same
    call (with a new call id), and the tools node answers with the next of ``results``
    (an ``ErrorInfo``: the call failed). ``run``: the trajectory's other fields."""
    events: list[AgentEvent] = [event(0, EventType.USER_INPUT, input=run.get("goal"))]
    for turn, result in enumerate(results):
        step, n = 1 + 2 * turn, len(events)
        meta = {"tool_name": tool, "tool_call_id": f"c{turn}"}
        asked = {"id": f"c{turn}", "name": tool, "args": args}
        failed = isinstance(result, ErrorInfo)
        events += [
            event(
                n,
                EventType.LLM_RESPONSE,
                agent_name="agent",
                step=step,
                output={"role": "assistant", "content": "", "tool_calls": [asked]},
            ),
            event(
                n + 1, EventType.TOOL_CALL, agent_name="agent", step=step, input=args, metadata=meta
            ),
            event(
                n + 2,
                EventType.TOOL_RESULT,
                agent_name="tools",
                step=step + 1,
                parent_id=f"e{n + 1}",
                metadata={"tool_name": tool},
                output=None if failed else result,
                error=result if failed else None,
            ),
        ]
    last = run.pop("last", None)
    if last is not None:
        events.append(last.model_copy(update={"id": f"e{len(events)}"}))
    return AgentTrajectory(id="loop", framework="test", events=events, **run)


def looping_run() -> AgentTrajectory:
    """The same failing call until the recursion limit."""
    failed = ErrorInfo(type="ValueError", message="'A123' is not an e-mail address")
    return tool_loop(
        "lookup_order_by_email",
        {"email": "A123"},
        [failed] * 4,
        goal="refund order A123",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="the graph raised"),
        last=event(
            0,
            EventType.ERROR,
            agent_name="agent",
            step=7,
            error=ErrorInfo(type="GraphRecursionError", message="Recursion limit of 8 reached"),
        ),
    )


def test_a_call_repeated_after_it_failed_is_found_and_the_fix_says_not_to_repeat_it() -> None:
    """Before: the model replies between the calls (each with its own call id) hid the
    repetition from the rule, and the fix said "... and retry once" to an agent that
    had retried four times."""
    report = diagnose(looping_run())
    assert "action.repeated_action" in report.failure_modes
    root = report.root_cause
    assert root is not None and (root.step_index, root.mode_id) == (1, "system.tool_error")
    assert report.fix is not None
    assert report.fix.directive == (
        'At step 1, agent: lookup_order_by_email({"email":"A123"}) failed: "ValueError: '
        "'A123' is not an e-mail address\". The agent made the same call 3 more times "
        "after it failed. Do not repeat the call unchanged: change it (another tool, or "
        "the arguments the error asks for)."
    )
    assert "retry" not in report.fix.directive
    # a tool's error is said with its kind: "'A123' ..." alone could be anything
    assert "lookup_order_by_email failed: ValueError: 'A123' is not an e-mail address" in (
        report.summary
    )


def test_a_default_guess_is_said_to_be_one() -> None:
    """No rule found anything: the first step that acted on what a lookup found (the
    answer) is blamed by default, and the summary and the report say it is a guess,
    not "Most likely root cause"."""
    from agentdebug.report import render

    run = AgentTrajectory(
        id="quiet",
        goal="What is the order total?",
        framework="test",
        events=[
            event(0, EventType.USER_INPUT, input="What is the order total?"),
            event(
                1,
                EventType.TOOL_CALL,
                agent_name="agent",
                input={"order": "A1"},
                metadata={"tool_name": "lookup"},
            ),
            event(
                2,
                EventType.TOOL_RESULT,
                agent_name="agent",
                output="total: $42.00",
                metadata={"tool_name": "lookup"},
                parent_id="e1",
            ),
            event(3, EventType.FINAL_ANSWER, agent_name="agent", output="The total is $35."),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="wrong total"),
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and root.metadata.get("default_guess") is True
    assert "Most likely root cause" not in report.summary
    assert (
        "No rule located the cause; as a default guess, agent at the same step (the calls before "
        "it only looked things up, and this is the first step that acted "
        "on what they found), confidence 0.15: check it against the run, or diagnose with "
        "a model."
    ) in report.summary
    text = render(report, run, "text")
    assert "Root cause (a default guess: no rule located it): agent at step 3" in text
    assert "← a guess" in text and "← root cause" not in text
    # and `agentdebug show`'s view of the run says so too (before, "← root cause")
    from agentdebug.report import render_run

    shown = render_run(run, reports=[report])
    assert "← a guess" in shown and "← root cause" not in shown
    md = render(report, run, "md")
    assert "## Root cause\n\nA default guess: no rule located the cause.\n" in md


def polling_run(statuses: list[str], *, fail_first: bool = False) -> AgentTrajectory:
    """job_status("j1") called until the job is done."""
    reset = ErrorInfo(type="ConnectionError", message="connection reset")
    results: list[str | ErrorInfo] = [
        reset if fail_first and k == 0 else status for k, status in enumerate(statuses)
    ]
    return tool_loop(
        "job_status",
        {"job": "j1"},
        results,
        goal="run job j1",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="the job's output was not read"),
        last=event(
            0,
            EventType.FINAL_ANSWER,
            agent_name="agent",
            step=2 * len(statuses) + 1,
            output="The job failed.",
        ),
    )


def test_a_status_polled_until_it_changes_is_not_a_repeated_action() -> None:
    """The last call's result (done) is progress; before, it was left out, and the
    polling was found to be a loop without progress."""
    report = diagnose(polling_run(["running", "running", "running", "done"]))
    assert "action.repeated_action" not in report.failure_modes
    stuck = diagnose(polling_run(["running"] * 4))
    assert "action.repeated_action" in stuck.failure_modes


def test_a_retry_that_worked_is_not_counted_as_a_repeat_of_the_failed_call() -> None:
    """Before: "The agent made the same call 1 more times after it failed. Do not
    repeat the call unchanged", where repeating it was what worked."""
    from agentdebug.plugins import get_registry
    from agentdebug.remedies import fix_of
    from agentdebug.schema import Hypothesis

    run = polling_run(["-", "done"], fail_first=True)
    root = Hypothesis(
        agent_name="agent",
        step_index=1,
        event_id="e2",
        strategy="test",
        confidence=0.5,
        rationale="x",
        mode_id="system.tool_error",
    )
    fix = fix_of(root, get_registry(), run, "agent")
    assert fix is not None
    assert "more time" not in fix.directive and "once more" not in fix.directive
    assert fix.directive.endswith("retry once.")


def test_a_value_the_tool_refused_gets_a_fix_about_the_value_not_the_schema() -> None:
    """The call fit the tool's schema ("X9" is a string, as order_id is); the tool
    refused the value. "Match its schema exactly" sent the agent after the wrong
    thing (a review's find)."""
    meta = {"tool_name": "lookup_order"}
    run = AgentTrajectory(
        id="refused",
        goal="Where is order A1?",
        events=[
            event(0, EventType.USER_INPUT, input="Where is order A1?"),
            event(
                1, EventType.TOOL_CALL, agent_name="agent", input={"order_id": "X9"}, metadata=meta
            ),
            event(
                2,
                EventType.TOOL_RESULT,
                agent_name="tools",
                parent_id="e1",
                metadata=meta,
                error=ErrorInfo(type="ValueError", message="'X9' is not an order id"),
            ),
            event(3, EventType.FINAL_ANSWER, agent_name="agent", output="I could not find it."),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="no order status given"),
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert report.root_cause.mode_id == "action.malformed_tool_call"
    assert report.fix is not None
    assert report.fix.directive.endswith(
        "The tool refused the argument's value, not the call's form: give it a valid order "
        "id, one the task or an earlier result gives, not one made up."
    )


@pytest.mark.parametrize(
    "error",
    [
        "unexpected keyword argument 'qty'. Note: quantity must be a positive number",
        "missing required argument 'date'; quantity must be an integer",
        "start must be a date before end",
    ],
)
def test_a_form_problem_or_a_relation_is_not_read_as_a_refused_value(error: str) -> None:
    """A review's find: beside a form problem (a wrong argument name, a missing one),
    or for a relation between two valid values, "give it a valid date" was wrong."""
    meta = {"tool_name": "place_order"}
    run = AgentTrajectory(
        id="form",
        goal="Order two units",
        events=[
            event(0, EventType.USER_INPUT, input="Order two units"),
            event(1, EventType.TOOL_CALL, agent_name="agent", input={"qty": 2}, metadata=meta),
            event(
                2,
                EventType.TOOL_RESULT,
                agent_name="tools",
                parent_id="e1",
                metadata=meta,
                error=ErrorInfo(type="ValueError", message=error),
            ),
            event(3, EventType.FINAL_ANSWER, agent_name="agent", output="I could not order."),
        ],
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="nothing was ordered"),
    )
    report = diagnose(run)
    assert report.fix is not None
    assert "refused the argument's value" not in report.fix.directive
