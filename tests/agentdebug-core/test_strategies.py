"""Model strategies, the judge, the router and the fallbacks, driven through the real
openai client over real HTTP to a scripted local server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.llm import Budget, LLMCallFailed, LLMSettings, NoModelConfigured
from agentdebug.llm.testing import Reply, ScriptedServer
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from conftest import EXAMPLES, run_cli

EXAMPLE = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())


def settings_for(server: ScriptedServer, **kw: Any) -> LLMSettings:
    return LLMSettings(
        model="scripted",
        base_url=server.base_url,
        api_key="test-key",
        cache=False,
        max_retries=1,
        **kw,
    )


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in request["messages"] if m["role"] == "user")


def answer(agent: str, step: int, confidence: float = 0.8, **extra: Any) -> str:
    return json.dumps(
        {
            "agent": agent,
            "step": step,
            "failure_mode": None,
            "reason": "because",
            "evidence": [],
            "confidence": confidence,
            **extra,
        }
    )


def chain(n: int, says: str = "step {i} says {sum}") -> AgentTrajectory:
    """n steps, alternating agents; no errors, so the free tier has nothing to go on.
    Step i says ``says`` with ``{i}`` and ``{sum}`` (i * 7) filled in."""
    agents = ["planner", "coder", "critic"]
    return AgentTrajectory(
        id="chain",
        goal="compute the thing",
        events=[
            AgentEvent(
                id=f"e{i}",
                type=EventType.MESSAGE,
                step_index=i,
                agent_name=agents[i % 3],
                output=says.format(i=i, sum=i * 7),
            )
            for i in range(n)
        ],
    )


# -- all-at-once -------------------------------------------------------------------------


def test_all_at_once_reads_the_run_once_and_reports_real_usage() -> None:
    with ScriptedServer(
        [
            Reply(
                answer("searcher", 3, evidence=[{"step": 3, "text": "14/12/2026"}]),
                usage=(1234, 56),
            )
        ]
    ) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 3)
    assert root.strategy == "all-at-once"
    assert root.evidence[0].quote == "14/12/2026" and root.evidence[0].event_id == "e3"
    assert report.tier == "model"
    assert (report.cost.calls, report.cost.input_tokens, report.cost.output_tokens) == (1, 1234, 56)
    (request,) = server.requests
    prompt = user_text(request)
    assert "search_fares" in prompt and "[step 13" in prompt
    assert "Automatic checks flagged" in prompt  # the free tier's findings are passed on
    assert request["temperature"] == 0


def test_an_answer_naming_an_agent_that_did_not_act_at_its_step_says_so() -> None:
    """The model names the critic at step 1, where the coder acted: both are kept
    as given (Who&When scores them apart), and the summary says who acted there
    (before, only the metadata did, and the report read as if the critic had)."""
    with ScriptedServer([Reply(answer("critic", 1))]) as server:
        report = diagnose(chain(6), attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("critic", 1)
    assert "(At step 1 it was coder that acted, not critic.)" in report.summary


def test_the_answer_schema_only_admits_steps_and_agents_that_exist() -> None:
    script = [Reply(answer("nobody", 99)), Reply(answer("booker", 11))]
    with ScriptedServer(script) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    assert report.root_cause is not None and report.root_cause.step_index == 11
    assert len(server.requests) == 2  # one repair round
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert "99" not in json.dumps(schema["properties"]["step"])


def test_reference_answer_reaches_the_model_only_when_asked() -> None:
    traj = EXAMPLE.model_copy(update={"reference_answer": "BOOKED-XYZ-777"})
    with ScriptedServer([Reply(answer("searcher", 3)), Reply(answer("searcher", 3))]) as server:
        diagnose(traj, attributor="all-at-once", settings=settings_for(server))
        diagnose(traj, attributor="all-at-once", settings=settings_for(server), with_reference=True)
    assert "BOOKED-XYZ-777" not in user_text(server.requests[0])
    assert "BOOKED-XYZ-777" in user_text(server.requests[1])


# -- step-by-step ------------------------------------------------------------------------------


def step_asked(request: dict[str, Any]) -> int:
    match = re.search(r"is step (\d+) \(by", user_text(request))
    assert match, user_text(request)[-500:]
    return int(match.group(1))


def test_step_by_step_stops_at_the_first_decisive_step() -> None:
    def script(request: dict[str, Any]) -> str:
        step = step_asked(request)
        return json.dumps(
            {
                "decisive": step == 4,
                "error_probability": 0.9 if step == 4 else 0.1,
                "failure_mode": None,
                "reason": "r",
                "evidence": f"step {step} says {step * 7}" if step == 4 else "",
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(chain(9), attributor="step-by-step", settings=settings_for(server))
    assert [step_asked(r) for r in server.requests] == [0, 1, 2, 3, 4]
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("coder", 4)
    # Each call sees the record only up to the step being judged.
    assert "step 5 says" not in user_text(server.requests[-1])


def test_step_by_step_with_no_decisive_step_says_so() -> None:
    def script(request: dict[str, Any]) -> str:
        step = step_asked(request)
        return json.dumps(
            {
                "decisive": False,
                "error_probability": 0.4 if step == 2 else 0.1,
                "failure_mode": None,
                "reason": "r",
                "evidence": "",
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(chain(5), attributor="step-by-step", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == 2 and root.confidence <= 0.3
    assert "no step was judged decisive" in root.rationale
    assert len(server.requests) == 5


# -- binary search --------------------------------------------------------------------------------


def halves(request: dict[str, Any]) -> tuple[list[int], list[int]]:
    text = user_text(request)
    spans = re.findall(r"part is (?:steps (\d+)–(\d+)|step (\d+))", text)
    out = []
    for a, b, single in spans[:2]:
        out.append(
            list(range(int(single), int(single) + 1)) if single else list(range(int(a), int(b) + 1))
        )
    return out[0], out[1]


@pytest.mark.parametrize("target", [0, 5, 12, 19])
def test_binary_search_finds_the_step_in_log_calls(target: int) -> None:
    def script(request: dict[str, Any]) -> str:
        first, _second = halves(request)
        return json.dumps(
            {
                "half": "first" if target in first else "second",
                "reason": "r",
                "evidence": "",
                "confidence": 0.9,
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(chain(20), attributor="binary-search", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == target
    assert len(server.requests) <= 5  # ceil(log2(20))


def test_binary_search_asks_again_once_then_stops_explicitly() -> None:
    unclear = json.dumps(
        {"half": "unclear", "reason": "cannot tell", "evidence": "", "confidence": 0.2}
    )
    with ScriptedServer([unclear, unclear]) as server:
        report = diagnose(chain(8), attributor="binary-search", settings=settings_for(server))
    root = report.root_cause
    assert root is not None
    assert root.step_index == 0 and root.confidence == 0.1
    assert root.metadata["stopped"] == "ambiguous" and root.metadata["range"] == [0, 7]
    assert len(server.requests) == 2
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and "unclear" in second[-1]["content"]


def test_binary_search_goes_on_when_the_second_ask_is_clear() -> None:
    unclear = json.dumps({"half": "unclear", "reason": "?", "evidence": "", "confidence": 0.2})
    second = json.dumps({"half": "second", "reason": "r", "evidence": "", "confidence": 0.8})
    first = json.dumps({"half": "first", "reason": "r", "evidence": "", "confidence": 0.8})
    with ScriptedServer([unclear, second, first, first]) as server:
        report = diagnose(chain(8), attributor="binary-search", settings=settings_for(server))
    assert report.root_cause is not None and report.root_cause.step_index == 4


# -- judge ------------------------------------------------------------------------------------------


def test_llm_judge_adds_typed_findings_when_asked() -> None:
    reply = json.dumps(
        {
            "findings": [
                {
                    "step": 9,
                    "failure_mode": "action.fabricated_action",
                    "description": "invented a fare",
                    "evidence": "UA 1234 at $189",
                    "confidence": 0.8,
                }
            ]
        }
    )
    with ScriptedServer([reply]) as server:
        report = diagnose(EXAMPLE, judge=True, settings=settings_for(server))
        without = diagnose(EXAMPLE, settings=settings_for(server))
    judged = [f for f in report.findings if f.detector == "llm-judge"]
    assert len(judged) == 1
    assert (judged[0].step_index, judged[0].agent_name, judged[0].mode_id) == (
        9,
        "searcher",
        "action.fabricated_action",
    )
    assert judged[0].evidence[0].quote == "UA 1234 at $189"
    assert "llm-judge" in report.detectors
    assert "llm-judge" not in without.detectors


# -- router, budgets, fallbacks ------------------------------------------------------------------------


def test_router_without_a_model_is_the_free_tier() -> None:
    report = diagnose(EXAMPLE, attributor="auto", settings=LLMSettings())
    assert report.tier == "free" and report.cost.calls == 0
    assert report.root_cause is not None and report.root_cause.step_index == 3


def test_router_stops_when_the_model_agrees_with_the_free_tier() -> None:
    """Agreement raises the confidence by what the agreeing strategy adds: the
    chance that either is right (before, any agreement took a 0.18 to 0.59). A
    model "agreeing" at confidence 0 is no agreement at all: see
    test_router_review.py."""
    model_confidence = 0.5
    free = diagnose(EXAMPLE, settings=LLMSettings()).root_cause
    assert free is not None and 0 < free.confidence < 0.5
    reply = Reply(answer("searcher", 3, confidence=model_confidence))
    with ScriptedServer([reply]) as server:
        report = diagnose(EXAMPLE, attributor="auto", settings=settings_for(server))
    assert len(server.requests) == 1
    root = report.root_cause
    assert root is not None and root.step_index == 3
    assert root.metadata["supported_by"] == ["heuristic", "all-at-once"]
    expected = 1 - (1 - free.confidence) * (1 - model_confidence)
    assert root.confidence == pytest.approx(expected, abs=0.001)
    assert root.confidence > 0.5
    # the model named no failure mode and quoted nothing: what the free tier found
    # at that step (its mode, the fix from it, its evidence) is kept, its reason the model's
    assert free.mode_id and root.mode_id == free.mode_id
    assert free.evidence and root.evidence == free.evidence
    assert root.rationale == "because"
    assert report.fix is not None and report.fix.directive


def test_router_escalates_when_candidates_disagree() -> None:
    def script(request: dict[str, Any]) -> str:
        text = user_text(request)
        if "is step" in text:  # step-by-step: step 9 is decisive
            step = step_asked(request)
            return json.dumps(
                {
                    "decisive": step == 9,
                    "error_probability": 0.9 if step == 9 else 0.1,
                    "failure_mode": None,
                    "reason": "r",
                    "evidence": "",
                }
            )
        return answer(
            "searcher", 9, confidence=0.4
        )  # all-at-once: unsure, disagrees with heuristic (3)

    with ScriptedServer(script) as server:
        report = diagnose(EXAMPLE, attributor="auto", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == 9
    assert root.metadata["supported_by"] == ["all-at-once", "step-by-step"]
    assert any("step-by-step" in line for line in root.metadata["route"])
    assert len(server.requests) > 1


def test_a_budget_stops_the_router_and_the_report_says_so() -> None:
    with ScriptedServer(lambda r: answer("searcher", 9, confidence=0.4)) as server:
        report = diagnose(
            EXAMPLE, attributor="auto", settings=settings_for(server), budget=Budget(max_calls=1)
        )
    assert len(server.requests) == 1
    assert any("budget exhausted" in n for n in report.notes)
    assert report.root_cause is not None


def test_a_failed_model_call_falls_back_and_names_the_call() -> None:
    with ScriptedServer(lambda r: Reply(status=500, content="boom")) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.strategy == "heuristic" and root.step_index == 3
    assert any("attributor 'all-at-once' failed" in n and "heuristic" in n for n in report.notes)
    failed = [a for a in report.audit if a.stage == "llm" and a.outcome == "error"]
    assert failed and failed[0].strategy == "all-at-once"
    # A bare 500 on a fresh client may mean "response format not supported", so the
    # client tries the other forms before retrying; every request is counted.
    assert report.cost.calls == len(server.requests) >= 2


def test_no_fallback_fails_instead() -> None:
    with ScriptedServer(lambda r: Reply(status=500, content="boom")) as server:
        with pytest.raises(LLMCallFailed):
            diagnose(
                EXAMPLE, attributor="all-at-once", settings=settings_for(server, no_fallback=True)
            )
    with pytest.raises(NoModelConfigured):
        diagnose(EXAMPLE, attributor="all-at-once", settings=LLMSettings(), no_fallback=True)


def test_a_model_strategy_without_a_model_says_what_it_did_instead() -> None:
    report = diagnose(EXAMPLE, attributor="binary-search", settings=LLMSettings())
    assert report.attributor == "heuristic"
    assert any("needs a model and none is configured" in n for n in report.notes)


# -- the command line -------------------------------------------------------------------------------


def test_cli_diagnose_with_a_model_and_no_fallback(tmp_path: Path) -> None:
    with ScriptedServer(lambda r: answer("booker", 11)) as server:
        ok = run_cli(
            "diagnose",
            str(EXAMPLES / "failed_booking.json"),
            "--attributor",
            "all-at-once",
            "--model",
            "scripted",
            "--base-url",
            server.base_url,
            "--api-key",
            "k",
            "--no-store",
        )
    assert ok.returncode == 0, ok.stderr
    assert "Root cause: booker at step 11" in ok.stdout
    assert "1 model call(s)" in ok.stdout
    with ScriptedServer(lambda r: Reply(status=401, content="bad key")) as server:
        bad = run_cli(
            "diagnose",
            str(EXAMPLES / "failed_booking.json"),
            "--attributor",
            "all-at-once",
            "--model",
            "scripted",
            "--base-url",
            server.base_url,
            "--api-key",
            "k",
            "--no-store",
            "--no-fallback",
        )
    assert bad.returncode == 1
    assert bad.stderr.startswith("error:") and "401" in bad.stderr and "Traceback" not in bad.stderr


def test_reports_show_per_claim_whether_its_quotes_are_in_the_trace() -> None:
    from agentdebug.report import render

    quotes = [
        {"step": 3, "text": '"date": "14/12/2026"'},  # JSON as the model copies it from the input
        {"step": 3, "text": "the user asked for a refund"},  # invented
    ]
    with ScriptedServer([Reply(answer("searcher", 3, confidence=0.8, evidence=quotes))]) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None
    assert [e.grounded for e in root.evidence] == [True, False]
    assert root.confidence == 0.6  # 0.8 x 0.75 for the missing quote
    assert root.metadata["grounding"]["missing"] == 1
    text = render(report, EXAMPLE, "text")
    assert '"the user asked for a refund" [NOT FOUND in trace]' in text
    assert "[grounded: normalized]" in text
    assert any(a.stage == "ground" and "1 not found" in (a.detail or "") for a in report.audit)


def test_router_keeps_what_it_paid_for_when_a_later_stage_fails() -> None:
    def script(request: dict[str, Any]) -> Reply | str:
        if "is step" in user_text(request):  # step-by-step: the server breaks down
            return Reply(status=500, content="overloaded")
        return answer("searcher", 9, confidence=0.4)

    with ScriptedServer(script) as server:
        report = diagnose(EXAMPLE, attributor="auto", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.strategy.startswith(
        "auto:"
    )  # not the plain heuristic fallback
    assert {h.step_index for h in report.hypotheses} >= {3, 9}
    assert any("step-by-step failed" in n for n in report.notes)


def test_a_prompt_budget_too_small_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentdebug.errors import ConfigError

    monkeypatch.setenv("AGENTDEBUG_PROMPT_BUDGET", "50")
    with (
        ScriptedServer([]) as server,
        pytest.raises(ConfigError, match="raise AGENTDEBUG_PROMPT_BUDGET"),
    ):
        diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    assert server.requests == []


def test_a_model_attributor_that_crashes_falls_back_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug.attribute import all_at_once

    def boom(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("a bug in the strategy")

    monkeypatch.setattr(all_at_once, "fit_view", boom)
    with ScriptedServer([]) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    assert report.root_cause is not None and report.root_cause.strategy == "heuristic"
    assert any(
        "RuntimeError: a bug in the strategy" in n and "heuristic" in n for n in report.notes
    )
    assert not any(n.startswith("free tier") for n in report.notes)  # no contradictory note
