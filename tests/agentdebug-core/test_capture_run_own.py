"""What a run's own code does, outside any agent it names: an exception that leaves
its ``with`` block before an agent acted is blamed on the run's one declared agent,
else on "the run's own code", never on an "unknown agent"."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.diagnose import diagnose
from agentdebug.report import render_run, render_text
from agentdebug.store import open_store

OWN_CODE = "the run's own code (before any agent acted)"


def _raising(dbg: AgentDebug, agents: list[str]) -> str:
    with pytest.raises(ValueError), dbg.trace(goal="plan the trip", agents=agents) as run:
        raise ValueError("no destination configured")
    return run.id


def test_an_exception_before_any_event_is_the_one_declared_agents(home: Path) -> None:
    from conftest import run_cli

    dbg = AgentDebug()
    run = open_store(home).load_trajectory(_raising(dbg, ["planner"]))
    report = dbg.diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("planner", 0)
    text = render_text(report, run)
    assert "Root cause: planner at step 0" in text
    assert "planner raised: ValueError: no destination configured" in text
    assert "unknown agent" not in text
    dbg.close()
    (line,) = [x for x in run_cli("list").stdout.splitlines() if x.startswith(run.id)]
    assert "planner@0" in line  # (before: "-", no agent to name)


@pytest.mark.parametrize("agents", [[], ["planner", "booker"]])
def test_an_exception_of_no_agent_is_the_runs_own_code(home: Path, agents: list[str]) -> None:
    dbg = AgentDebug()
    run = open_store(home).load_trajectory(_raising(dbg, agents))
    report = dbg.diagnose(run)
    root = report.root_cause
    assert root is not None and root.agent_name is None  # no agent is made up
    text = render_text(report, run)
    assert f"Root cause: {OWN_CODE} at step 0" in text
    assert "the run's own code raised: ValueError: no destination configured" in text
    assert f"Fix: At step 0, {OWN_CODE}:" in text
    assert f"Most likely root cause: {OWN_CODE} at the same step" in report.summary
    shown = render_run(run, reports=[report])  # what `agentdebug show` prints
    assert "diagnosis: The failure shows at step 0" in shown and OWN_CODE in shown
    for said in (text, report.summary, shown):
        assert "unknown agent" not in said and "unnamed agent" not in said


def test_after_agents_acted_the_runs_own_code_is_named_so(home: Path) -> None:
    dbg = AgentDebug()
    with pytest.raises(ValueError), dbg.trace(goal="plan the trip") as run:
        run.record(EventType.MESSAGE, agent_name="helper", output="looking into it now")
        run.record(EventType.TOOL_RESULT, agent_name="helper", output="three routes")
        raise ValueError("no destination configured")
    report = diagnose(open_store(home).load_trajectory(run.id))
    (own,) = [h for h in report.hypotheses if h.agent_name is None]
    assert own.metadata["blames_run_code"] == "the run's own code"  # (agents had acted)


def test_an_answer_given_to_set_outcome_then_recorded_is_one_answer(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="2+2", agents=["solver"]) as t:
        t.set_outcome("success", final_answer="4")
        t.record(EventType.FINAL_ANSWER, agent_name="solver", output="4")
    events = open_store(home).load_trajectory(t.id).events
    assert [(e.type, e.agent_name, e.output) for e in events] == [
        (EventType.FINAL_ANSWER, "solver", "4")
    ]


def test_a_failed_run_s_answer_given_to_set_outcome_is_not_an_answer_event(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="book a flight", agents=["booker"]) as t:
        t.record(
            EventType.TOOL_RESULT,
            agent_name="booker",
            output="503 Service Unavailable",
            metadata={"tool_name": "book"},
        )
        t.set_outcome("failure", reason="booking failed", final_answer="Sorry, no booking.")
    run = open_store(home).load_trajectory(t.id)
    assert [e.type for e in run.events] == [EventType.TOOL_RESULT]
    assert run.outcome.final_answer == "Sorry, no booking."
    report = diagnose(run)
    # where the failure shows is the tool's error, not an answer it gave up with
    assert report.symptom is not None and report.symptom.event_id == run.events[0].id
