"""`diagnose --format md` says what the text report says: the earlier run a root
cause is in, why no root cause was named, what the cache answered, and who acted
at a step a model blamed on another agent."""

from __future__ import annotations

from pathlib import Path

from agentdebug import AgentDebug, EventType
from agentdebug.llm.testing import ScriptedServer, schema_answerer
from agentdebug.report import render
from agentdebug.schema import DiagnosticReport, Hypothesis
from conftest import EXAMPLES, ev, run_cli, traj

EXAMPLE = str(EXAMPLES / "failed_booking.json")


def test_markdown_names_the_earlier_run_the_root_cause_is_in(home: Path) -> None:
    dbg = AgentDebug(str(home))
    with dbg.trace(goal="Refund order 7", framework="wf", run_id="first-run") as t:
        t.record(EventType.TOOL_CALL, agent_name="clerk", input={"order": "x7"})
        t.record(EventType.TOOL_RESULT, agent_name="clerk", error="ValidationError: bad order id")
        t.set_outcome("failure", reason="crashed")
        mark = t.mark()
    with dbg.trace(goal="Refund order 7", framework="wf", run_id="second-run", continues=mark) as t:
        t.record(EventType.FINAL_ANSWER, agent_name="clerk", output="Refund completed.")
        t.set_outcome("failure", reason="no refund was issued")
    dbg.close()
    text = run_cli("diagnose", "second-run", "--no-store")
    assert "clerk at step 0" in text.stdout and "in run first-run, which" in text.stdout
    md = run_cli("diagnose", "second-run", "--no-store", "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "**clerk** at **step 0**" in md.stdout
    assert "Step 0 is in run `first-run`, which this run continues." in md.stdout
    assert "- **Events:** 3, with the 1 run it continues" in md.stdout


def test_markdown_says_why_no_root_cause_was_named(home: Path) -> None:
    dbg = AgentDebug(str(home))
    with dbg.trace(goal="Say hi", framework="wf", run_id="fine-run") as t:
        t.record(EventType.FINAL_ANSWER, agent_name="a", output="hi")
        t.set_outcome("success")
    dbg.close()
    md = run_cli("diagnose", "fine-run", "--no-store", "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "None named (the run succeeded and no detector found a fault" in md.stdout
    # no empty tables under the headings (before: a header row with nothing in it)
    assert "## Hypotheses\n\nNone.\n" in md.stdout
    assert "## Findings\n\nNone: no rule found a failure.\n" in md.stdout
    assert "| rank |" not in md.stdout and "| step | agent |" not in md.stdout


def test_markdown_cost_counts_what_the_cache_answered() -> None:
    with ScriptedServer(schema_answerer) as server:
        args = ("diagnose", EXAMPLE, "--no-store", "--format", "md", "--attributor")
        model = ("--model", "scripted", "--base-url", server.base_url, "--api-key", "k")
        first = run_cli(*args, "all-at-once", *model)
        again = run_cli(*args, "all-at-once", *model)
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert "1 model call(s)" in first.stdout and "cache" not in first.stdout
    assert "0 model call(s), 0 input tokens, 0 output tokens (+1 answered from the cache" in (
        again.stdout
    )


def test_markdown_says_who_acted_at_a_step_blamed_on_another_agent() -> None:
    run = traj(ev(0, EventType.PLAN, "planner", output="plan"), ev(1, EventType.MESSAGE, "coder"))
    blamed = Hypothesis(
        agent_name="coder",
        step_index=0,
        confidence=0.6,
        strategy="all-at-once",
        metadata={"agent_acting_at_step": "planner"},
    )
    report = DiagnosticReport(id="r", trajectory_id="t", hypotheses=[blamed])
    assert "note: at step 0 it was planner that acted" in render(report, run, "text")
    assert "Note: at step 0 it was planner that acted, not coder." in render(report, run, "md")
