"""Which decision a failure is charged to, and what the step blamed is called."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.attribute import HeuristicAttributor
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)
from conftest import DATA


def span(i: int, type_: EventType, parent: str | None, **kw: Any) -> AgentEvent:
    if isinstance(kw.get("error"), str):
        kw["error"] = ErrorInfo(message=kw["error"])
    return AgentEvent(
        id=f"e{i}", type=type_, step_index=i, agent_name="CodeAgent", parent_id=parent, **kw
    )


def code_agent_run() -> AgentTrajectory:
    """A smolagents CodeAgent as TRAIL records it: each agent step a span holding the
    model call that wrote its code and the tool calls that code made. Step 1's code
    reads a file that is not there (its tool call and the step fail); step 2's code
    fails on its own (a later, different failure)."""
    events = [
        span(0, EventType.USER_INPUT, None, output="Find the longest word on the board."),
        span(1, EventType.AGENT_START, None),
        span(
            2,
            EventType.SPAN,
            "e1",
            module="Step 1",
            error="Code execution failed at line "
            "'text = inspect_file_as_text(\"words_alpha.txt\")' due to: FileNotFoundError: "
            "No such file or directory: 'words_alpha.txt'",
        ),
        span(3, EventType.LLM_CALL, "e2", output="text = inspect_file_as_text('words_alpha.txt')"),
        span(
            4,
            EventType.TOOL_CALL,
            "e2",
            metadata={"tool_name": "inspect_file_as_text"},
            input={"file_path": "words_alpha.txt"},
            error="FileNotFoundError: No such file or directory: 'words_alpha.txt'",
        ),
        span(
            5,
            EventType.SPAN,
            "e1",
            module="Step 2",
            error="Code execution failed at line 'root = build_trie(words)' due to: "
            "KeyError: 'children'",
        ),
        span(6, EventType.LLM_CALL, "e5", output="root = build_trie(words)"),
        span(7, EventType.SPAN, "e1", module="Step 3"),
        span(8, EventType.LLM_CALL, "e7", output="final_answer('BRINIEST')"),
    ]
    return AgentTrajectory(id="t", goal="g", events=events)


def test_a_failed_step_is_charged_to_the_model_call_that_wrote_it_not_an_earlier_call() -> None:
    """Step 2 failed on code its own model call wrote (step 6), not on the call of
    step 4, which had already failed on its own (before, step 4 was blamed as
    "Tool or runtime error", "issued the call that failed at step 5", though its
    own finding was a missing file)."""
    t = code_agent_run()
    hyps = HeuristicAttributor().attribute(t, RulePack().detect(t))
    by_step = {h.step_index: h for h in hyps}
    assert hyps[0].step_index == 3  # the model call that wrote step 1's code
    assert hyps[0].mode_id == "system.resource_not_found"
    assert "decided what its step ran, which failed at step 2" in (hyps[0].rationale or "")
    assert "issued the call that failed at step 4" in (hyps[0].rationale or "")
    assert by_step[6].mode_id == "system.tool_error"
    assert "failed at step 5" in (by_step[6].rationale or "")
    assert all("failed at step 5" not in (h.rationale or "") for h in hyps if h.step_index != 6)


def test_a_step_blamed_carries_its_own_findings_mode() -> None:
    """A failure charged to a step from elsewhere does not relabel the step's own
    finding: the root cause at step 1 is the missing file found there, though the
    later error charged to it weighs more."""
    events = [
        AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, output="count rows"),
        AgentEvent(
            id="e1",
            type=EventType.TOOL_CALL,
            step_index=1,
            agent_name="coder",
            metadata={"tool_name": "read_csv"},
            error=ErrorInfo(message="FileNotFoundError: data.csv"),
        ),
        AgentEvent(
            id="e2",
            type=EventType.TOOL_RESULT,
            step_index=2,
            agent_name="terminal",
            output="exitcode: 1 (execution failed)\nKeyError: 'rows'",
        ),
    ]
    t = AgentTrajectory(
        id="t", goal="g", events=events, outcome=Outcome(status=OutcomeStatus.FAILURE)
    )
    report = diagnose(t)
    root = report.root_cause
    assert root is not None and root.step_index == 1
    own = next(f for f in report.findings if f.step_index == 1)
    assert root.mode_id == own.mode_id == "system.resource_not_found"


TRACE = DATA / "trail" / "gaia" / "traces" / "7bf0addde339e4cac9dd3b772232a7e0.json"


@pytest.mark.skipif(not TRACE.exists(), reason="TRAIL data not present")
def test_trail_trace_root_cause_agrees_with_its_finding() -> None:
    from agentdebug.io import import_file

    t = import_file(TRACE)[0].trajectory
    report = diagnose(t)
    root = report.root_cause
    assert root is not None
    at_step = [f for f in report.findings if f.step_index == root.step_index]
    assert all(f.mode_id == root.mode_id for f in at_step)
    # the model call TRAIL's annotators name (it wrote the code that read a missing file)
    assert root.event_id == "072dda8ecc007204"
    assert root.mode_id == "system.resource_not_found"
    for h in report.hypotheses:
        for cited in ("issued the call that failed at step 10",):
            assert cited not in (h.rationale or "")


def test_a_run_stuck_repeating_an_action_is_blamed_where_the_repetition_began() -> None:
    """The same search five times, then the step limit: the limit is how the run
    ended, the repetition what used the steps up (before, the root cause was "Step
    or budget limit exhausted" at step 5, the repetition's first step second)."""
    events: list[AgentEvent] = [
        AgentEvent(id="u", type=EventType.USER_INPUT, step_index=0, input="status of order 1234?")
    ]
    for step in range(1, 6):
        events += [
            AgentEvent(
                id=f"r{step}",
                type=EventType.REASONING,
                step_index=step,
                agent_name="support",
                output="Search once more",
            ),
            AgentEvent(
                id=f"c{step}",
                type=EventType.TOOL_CALL,
                step_index=step,
                agent_name="support",
                metadata={"tool_name": "search_kb"},
                input={"query": "order 1234"},
            ),
            AgentEvent(
                id=f"o{step}",
                type=EventType.TOOL_RESULT,
                step_index=step,
                agent_name="support",
                parent_id=f"c{step}",
                metadata={"tool_name": "search_kb"},
                output="No articles matched.",
            ),
        ]
    events.append(
        AgentEvent(
            id="x",
            type=EventType.ERROR,
            step_index=5,
            agent_name="support",
            error=ErrorInfo(
                type="StepLimitReached", message="max steps (5) reached without a final answer"
            ),
        )
    )
    t = AgentTrajectory(
        id="t", goal="g", events=events, outcome=Outcome(status=OutcomeStatus.FAILURE)
    )
    report = diagnose(t)
    assert {f.mode_id for f in report.findings} == {
        "action.repeated_action",
        "planning.step_limit_exhausted",
    }
    root = report.root_cause
    assert root is not None
    assert (root.step_index, root.mode_id) == (1, "action.repeated_action")
    assert report.fix is not None and "Stop repeating" in report.fix.directive
    limit = next(h for h in report.hypotheses if h.step_index == 5)
    assert limit.confidence < root.confidence
    # a step limit alone is still the root cause
    alone = t.model_copy(update={"events": [events[0], *events[1:3], events[-1]]})
    found = diagnose(alone).root_cause
    assert found is not None and found.mode_id == "planning.step_limit_exhausted"
