"""Recoverers and the policy gate: each recoverer through the real client against a
local OpenAI-compatible server, the manual file, and every gate mode."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.errors import InputError
from agentdebug.llm import LLMSettings, NoModelConfigured, use_settings
from agentdebug.llm.testing import ScriptedServer
from agentdebug.recover import (
    AutoManualRecoverer,
    CriticRecoverer,
    Manual,
    NativeRecoverer,
    RecoveryError,
    ReflexionRecoverer,
    decide,
)
from agentdebug.schema import DiagnosticReport, Outcome, OutcomeStatus, RecoveryPlan
from toy_agent import failing_run


def settings_for(server: ScriptedServer) -> LLMSettings:
    return LLMSettings(
        model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0
    )


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


@pytest.fixture
def run_and_report(tmp_path: Path) -> tuple[Any, DiagnosticReport]:
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    return run, dbg.diagnose(run)


def test_native_uses_the_reports_fix_and_blamed_step_without_a_call(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    run, report = run_and_report
    plan = NativeRecoverer().recover(run, report)
    assert report.fix is not None
    assert plan.directive == report.fix.directive
    assert plan.resume_step == 1 and plan.target_agent == "researcher"
    assert plan.report_id == report.id and plan.trajectory_id == run.id
    assert plan.cost.calls == 0 and plan.audit == []


def test_native_without_a_fix_tells_the_blamed_step_how_the_run_failed(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    """No fix (no failure mode was detected): a generic directive from the run's
    own failure, addressed to the blamed step, and said to be generic."""
    run, report = run_and_report
    failed = run.model_copy(
        update={"outcome": run.outcome.model_copy(update={"reason": "answered Sydney."})}
    )
    plan = NativeRecoverer().recover(failed, report.model_copy(update={"fix": None}))
    root = report.root_cause
    assert root is not None
    assert plan.resume_step == root.step_index and plan.target_agent == root.agent_name
    assert plan.directive.startswith(f"At step {root.step_index}, {root.agent_name}: ")
    assert "the run failed: answered Sydney. Reconsider the decision" in plan.directive
    assert plan.rationale.startswith("generic directive") and plan.notes
    assert plan.cost.calls == 0


def test_native_refuses_a_report_without_fix_or_root(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    run, report = run_and_report
    silent = run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})
    bare_fix = report.model_copy(update={"fix": None, "symptom": None})
    with pytest.raises(RecoveryError, match=r"no fix .* records no failure reason or error"):
        NativeRecoverer().recover(silent, bare_fix)
    bare = report.model_copy(update={"fix": None, "hypotheses": []})
    with pytest.raises(RecoveryError, match="names no root-cause step"):
        NativeRecoverer().recover(run, bare)
    with pytest.raises(RecoveryError, match="names no root-cause step"):
        ReflexionRecoverer().recover(run, bare)


def test_reflexion_sends_the_trace_and_diagnosis_and_returns_the_reflection(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    run, report = run_and_report
    answer = {
        "reflection": "You searched for the largest city, not the capital.",
        "directive": "Search city_search for the capital of Australia.",
    }
    with ScriptedServer([json.dumps(answer)]) as server, use_settings(settings_for(server)):
        plan = ReflexionRecoverer().recover(run, report)
        sent = user_text(server.requests[0])
    assert "largest city of Australia" in sent  # the trace
    assert "Blamed: researcher at step 1" in sent  # the diagnosis
    assert "redoes step 1" in sent
    assert plan.strategy == "reflexion" and plan.resume_step == 1
    assert "largest city, not the capital" in plan.directive
    assert plan.directive.endswith("Search city_search for the capital of Australia.")
    assert plan.cost.calls == 1 and plan.audit[0].strategy == "reflexion"


def test_critic_names_checks_with_tools_and_flags_unknown_tools(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    run, report = run_and_report
    answer = {
        "critique": "The query was never checked against the goal.",
        "checks": [
            {"claim": "the query asks for the capital", "tool": "city_search", "how": "re-run"},
            {"claim": "the answer is a capital", "tool": "atlas", "how": "look it up"},
        ],
        "directive": "Query city_search for the capital before answering.",
    }
    with ScriptedServer([json.dumps(answer)]) as server, use_settings(settings_for(server)):
        plan = CriticRecoverer().recover(run, report)
        sent = user_text(server.requests[0])
    assert "Tools the agents can call: city_search" in sent
    assert "Before answering, verify:" in plan.directive
    assert "- the query asks for the capital with city_search (re-run)" in plan.directive
    assert plan.rationale == "The query was never checked against the goal."
    assert plan.notes == [
        "check 'the answer is a capital' names tool 'atlas', which the run never had"
    ]


def test_automanual_keeps_rules_in_the_manual_and_offers_them_later(
    run_and_report: tuple[Any, DiagnosticReport], tmp_path: Path
) -> None:
    run, report = run_and_report
    manual = Manual(tmp_path / "manual.json")
    first = {
        "rules": ["Search for exactly what the goal asks for."],
        "directive": "Search the capital.",
    }
    second = {
        "rules": ["search for exactly what the goal asks for", "Never answer over a tool error."],
        "directive": "Retry with the capital.",
    }
    with (
        ScriptedServer([json.dumps(first), json.dumps(second)]) as server,
        use_settings(settings_for(server)),
    ):
        plan1 = AutoManualRecoverer(manual).recover(run, report)
        assert manual.rules() == []  # a suggestion changes nothing until approved
        AutoManualRecoverer(manual).approved(plan1, run)
        plan2 = AutoManualRecoverer(manual).recover(run, report)
        second_prompt = user_text(server.requests[1])
    assert plan1.rules == plan1.new_rules == ["Search for exactly what the goal asks for."]
    assert "- Search for exactly what the goal asks for." in second_prompt  # offered back
    assert plan2.new_rules == ["Never answer over a tool error."]  # the repeat is dropped
    AutoManualRecoverer(manual).approved(plan2, run)
    texts = [r.text for r in manual.rules()]
    assert texts == [
        "Search for exactly what the goal asks for.",
        "Never answer over a tool error.",
    ]
    assert plan2.rules == texts and "Rules from the project's manual:" in plan2.directive
    first_rule = manual.rules()[0]
    assert first_rule.source_run == run.id and first_rule.framework == "toy"
    assert report.root_cause is not None and first_rule.mode_id == report.root_cause.mode_id
    directive = manual.directive_for("toy")
    assert directive is not None and "Never answer over a tool error." in directive
    assert manual.directive_for("langgraph") is None  # framework-specific rules stay there


def test_a_damaged_manual_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "manual.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"manual\.json: manual is not readable JSON"):
        Manual(path).rules()
    path.write_text(json.dumps({"rules": [{"txt": "x"}]}))
    with pytest.raises(InputError, match="record 0, field 'text'"):
        Manual(path).rules()


def test_model_recoverers_say_a_model_is_needed(
    run_and_report: tuple[Any, DiagnosticReport],
) -> None:
    run, report = run_and_report
    for recoverer in (ReflexionRecoverer(), CriticRecoverer(), AutoManualRecoverer()):
        with pytest.raises(NoModelConfigured, match=f"recoverer '{recoverer.name}' needs a model"):
            recoverer.recover(run, report)


# -- the gate -------------------------------------------------------------------------------


PLAN = RecoveryPlan(strategy="native", directive="Search the capital.", resume_step=1)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_gate_auto_and_never() -> None:
    assert decide(PLAN, "auto").approved
    never = decide(PLAN, "never")
    assert not never.approved and "suggestion only" in never.reason


def test_gate_ask_refuses_without_a_terminal_and_asks_on_one() -> None:
    refused = decide(PLAN, "ask", stdin=io.StringIO("y\n"))
    assert not refused.approved and "needs a terminal" in refused.reason
    shown = io.StringIO()
    yes = decide(PLAN, "ask", stdin=Terminal("y\n"), stdout=shown)
    assert yes.approved and yes.decided_by == "human"
    assert (
        "Rerun from step 1 (native)" in shown.getvalue()
        and "Search the capital." in shown.getvalue()
    )
    no = decide(PLAN, "ask", stdin=Terminal("\n"), stdout=io.StringIO())
    assert not no.approved and no.decided_by == "human"
    # a directive quoting the run's error text: its control characters as escapes
    # (before, a recorded ESC or BEL reached the terminal the person answers on)
    noisy = PLAN.model_copy(update={"directive": 'failed: "boom \x1b[2J\x07"', "notes": ["\x07"]})
    asked = io.StringIO()
    decide(noisy, "ask", stdin=Terminal("n\n"), stdout=asked)
    assert "\x1b" not in asked.getvalue() and "\x07" not in asked.getvalue()
    assert "boom \\x1b[2J\\x07" in asked.getvalue()


def test_gate_callable_policies() -> None:
    assert decide(PLAN, lambda p: p.resume_step == 1).approved
    refused = decide(PLAN, lambda p: (False, "too risky"))
    assert not refused.approved and refused.reason == "too risky"
    assert refused.policy.startswith("callable:") and refused.decided_by == "callable"

    def boom(plan: RecoveryPlan) -> bool:
        raise ValueError("no approvals today")

    broken = decide(PLAN, boom)
    assert not broken.approved and "ValueError: no approvals today" in broken.reason
    vague = decide(PLAN, lambda p: "no")
    assert not vague.approved and "returned 'no', not a bool" in vague.reason
    assert not decide(PLAN, lambda p: (True, "a", "b")).approved


def test_the_ask_question_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert decide(PLAN, "ask", stdin=Terminal("y\n")).approved
    out, err = capsys.readouterr()
    assert out == "" and "Rerun from step 1" in err


def test_gate_unknown_policy() -> None:
    with pytest.raises(Exception, match="unknown policy 'sometimes'"):
        decide(PLAN, "sometimes")  # type: ignore[arg-type]
