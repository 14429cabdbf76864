"""What a user reads after a model named the root cause: the model behind the
router's answer, a last line that agrees with the diagnosis, and `show`'s fix and
unfound quotes."""

from __future__ import annotations

import json

from agentdebug.diagnose import diagnose
from agentdebug.llm import LLMSettings
from agentdebug.llm.testing import Reply, ScriptedServer
from agentdebug.report import render_run, render_text
from agentdebug.schema import AgentTrajectory, OutcomeStatus
from test_strategies import EXAMPLE, answer, chain, settings_for


def _quiet_run() -> AgentTrajectory:
    """A run no rule finds fault with, that failed all the same."""
    run = chain(6)
    return run.model_copy(
        update={"outcome": run.outcome.model_copy(update={"status": OutcomeStatus.FAILURE})}
    )


def test_a_root_cause_no_rule_found_is_not_reported_as_no_failure() -> None:
    with ScriptedServer(
        [Reply(answer("coder", 4, evidence=[{"step": 4, "text": "step 4 says 28"}]))]
    ) as server:
        run = _quiet_run()
        report = diagnose(run, attributor="all-at-once", settings=settings_for(server))
    assert report.symptom is None and report.root_cause is not None
    last = render_text(report, run).rstrip().splitlines()[-1]
    assert "NoFailureFound" not in last
    assert last.startswith("RootCause: coder at step 4, named by all-at-once, model scripted")
    assert "no detector's rule reported an error" in last
    # the free tier's guess reads as a guess of the heuristic's
    free = diagnose(run, attributor="heuristic", settings=LLMSettings())
    assert render_text(free, run).rstrip().splitlines()[-1] == (
        "RootCause: planner at step 0, named by heuristic "
        "(no detector's rule reported an error in this run)"
    )
    # nothing found and nothing named (a run of unknown outcome): it says so
    unknown = chain(6)
    nothing = diagnose(unknown, attributor="heuristic", settings=LLMSettings())
    assert nothing.root_cause is None
    assert render_text(nothing, unknown).rstrip().splitlines()[-1].startswith("NoFailureFound")


def test_the_router_names_the_model_its_root_cause_came_from() -> None:
    with ScriptedServer([Reply(answer("searcher", 3, confidence=0.9))]) as server:
        report = diagnose(EXAMPLE, attributor="auto", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.strategy.startswith("auto:")
    text = render_text(report, EXAMPLE)
    assert f"(by {root.strategy}, model scripted)" in text
    shown = render_run(EXAMPLE, reports=[report])
    assert f"named by:  {root.strategy}, model scripted" in shown
    assert report.fix is not None
    assert f"fix:       {report.fix.directive[:40]}" in shown


def test_show_says_when_the_root_cause_rests_on_quotes_not_in_the_trace() -> None:
    invented = {"step": 3, "text": "the user asked for the 15th"}
    with ScriptedServer([Reply(answer("searcher", 3, evidence=[invented]))]) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and any(ev.grounded is False for ev in root.evidence)
    shown = render_run(EXAMPLE, reports=[report])
    assert f"evidence:  1 of its {len(root.evidence)} quote(s) not found in the trace" in shown
    assert json.loads(report.model_dump_json())["hypotheses"][0]["agent_name"] == "searcher"
