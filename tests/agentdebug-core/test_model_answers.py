"""How a model's answer is read: tool output is not a decision, one bad field does
not cost the whole answer, a named agent that did not act costs confidence, and a
model's own fix is used when it names what the run holds. Driven through the real
client against a scripted local server; each test checks the report a user reads."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agentdebug.attribute.model_common import _enum, mode_ids
from agentdebug.diagnose import diagnose
from agentdebug.llm import LLMSettings
from agentdebug.llm.answers import describe_errors, repair_message
from agentdebug.llm.testing import ScriptedServer, schema_of_request
from agentdebug.report import render
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from conftest import EXAMPLES
from pydantic import TypeAdapter, ValidationError

EXAMPLE = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
TOOL_STEPS = {4, 6, 8, 12}  # failed_booking: the search and checkout results


def settings_for(server: ScriptedServer) -> LLMSettings:
    return LLMSettings(
        model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0
    )


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


def answer(**fields: Any) -> str:
    value: dict[str, Any] = {
        "agent": "searcher",
        "step": 3,
        "failure_mode": "action.malformed_tool_call",
        "reason": "The searcher wrote the date as DD/MM/YYYY.",
        "evidence": [{"step": 3, "text": '"date":"14/12/2026"'}],
        "confidence": 0.9,
    }
    value.update(fields)
    return json.dumps(value)


def one_pass(reply: str, trajectory: AgentTrajectory = EXAMPLE) -> tuple[Any, list[Any]]:
    with ScriptedServer([reply]) as server:
        report = diagnose(trajectory, attributor="all-at-once", settings=settings_for(server))
    return report, server.requests


# -- 5. tool output is not an agent's decision --------------------------------------------


def test_tool_output_steps_are_not_offered_and_one_named_is_blamed_on_its_call() -> None:
    """A tool's output is not offered; named anyway (Who&When labels some such
    steps, so the step stands), it is blamed on the decision that produced it, at
    less than full confidence, and the report says so."""
    report, requests = one_pass(answer(step=4))
    assert len(requests) == 1
    schema = schema_of_request(requests[0]) or {}
    offered = set(schema["properties"]["step"]["enum"])
    assert not offered & (TOOL_STEPS | {0}) and 3 in offered
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 4)
    assert root.confidence == pytest.approx(0.9 * 0.75)
    assert root.metadata["decision_step"] == 3
    assert "step 4 is a tool's output, not a decision: blamed on searcher, whose step 3" in (
        root.rationale
    )
    # the fix, and a rerun, is for that decision: none reaches a tool's output
    assert report.fix is not None and report.fix.target_step == 3
    shown = render(report, EXAMPLE, "text")  # (the root's step beside the fix's, explained)
    assert "note: step 4 is a tool's output; searcher decided it at step 3" in shown


@pytest.mark.parametrize("model_in_tool", [False, True])
def test_a_graphs_tool_node_step_is_a_tool_output_too(model_in_tool: bool) -> None:
    """A LangGraph ToolNode's step (its start, the tool's result or error, its end)
    decides nothing: not offered, and one named is blamed on the model call that
    asked for the tool, which the fix is for (before, the tool node was the root
    cause at full confidence, and a closed loop reran it round after round); also
    with a model call a tool made inside it."""

    def e(i: str, kind: EventType, step: int, agent: str, **kw: Any) -> AgentEvent:
        return AgentEvent(id=i, type=kind, step_index=step, agent_name=agent, **kw)

    run = AgentTrajectory(
        id="lg",
        goal="Refund order A123",
        framework="langgraph",
        events=[
            e("e0", EventType.USER_INPUT, 0, "user", input="Refund order A123"),
            e("e1", EventType.AGENT_START, 1, "agent"),
            e("e2", EventType.LLM_RESPONSE, 1, "agent", output="lookup_order(Z999)"),
            e("e3", EventType.TOOL_CALL, 1, "agent", parent_id="e2", input={"order_id": "Z999"}),
            e("e4", EventType.AGENT_END, 1, "agent", parent_id="e1"),
            e("e5", EventType.AGENT_START, 2, "tools"),
            *(  # (a model a tool asked, inside the tool node's step)
                [e("e5m", EventType.LLM_RESPONSE, 2, "tools", output={"content": "no Z999"})]
                if model_in_tool
                else []
            ),
            e(
                "e6",
                EventType.TOOL_RESULT,
                2,
                "tools",
                parent_id="e3",
                error={"message": "no Z999"},
            ),
            e("e7", EventType.ERROR, 2, "tools", parent_id="e5", error={"message": "no Z999"}),
        ],
    )
    report, requests = one_pass(
        answer(agent="tools", step=2, fix="use order id A123 from the request"), run
    )
    offered = set((schema_of_request(requests[0]) or {})["properties"]["step"]["enum"])
    assert 2 not in offered and 1 in offered
    root = report.root_cause
    assert root is not None and (root.agent_name, root.metadata["decision_step"]) == ("agent", 1)
    assert report.fix is not None and report.fix.target_step == 1


def terminal_run() -> AgentTrajectory:
    """Who&When's shape: an expert writes code, Computer_terminal prints its output."""
    said = [
        ("Planner_Expert", EventType.MESSAGE, "Plan: count revisions before April 2018."),
        ("Coder_Expert", EventType.MESSAGE, 'release_date = "2018-04-20"\nprint(count)'),
        ("Computer_terminal", EventType.TOOL_RESULT, "exitcode: 0\nCode output: 610"),
        ("Coder_Expert", EventType.MESSAGE, "The page had 610 revisions. TERMINATE"),
    ]
    return AgentTrajectory(
        id="terminal",
        goal="How many revisions before the release month?",
        framework="ag2",
        events=[
            AgentEvent(id=f"e{i}", type=kind, step_index=i, agent_name=agent, output=text)
            for i, (agent, kind, text) in enumerate(said)
        ],
    )


def test_a_terminal_that_only_prints_tool_output_is_not_an_agent_to_blame() -> None:
    """Before, Computer_terminal's output was accepted as the decisive decision at
    full confidence, against the system prompt ("Tool outputs are not agent
    decisions")."""
    run = terminal_run()
    report, requests = one_pass(answer(agent="Computer_terminal", step=2, evidence=[]), run)
    schema = schema_of_request(requests[0]) or {}
    assert "Computer_terminal" not in schema["properties"]["agent"]["enum"]
    assert 2 not in schema["properties"]["step"]["enum"]
    assert "AGENTS: Planner_Expert, Coder_Expert\n" in user_text(requests[0])
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("Coder_Expert", 2)
    assert root.confidence == pytest.approx(0.9 * 0.75)
    assert "Computer_terminal, which only gave input or tool output" in root.rationale
    assert "blamed on Coder_Expert, whose step 1 produced it" in root.rationale


def test_step_by_step_does_not_ask_about_tool_output() -> None:
    def script(request: dict[str, Any]) -> str:
        return json.dumps({"decisive": False, "error_probability": 0.1, "reason": "r"})

    with ScriptedServer(script) as server:
        diagnose(EXAMPLE, attributor="step-by-step", settings=settings_for(server))
    asked = [int(re.search(r"is step (\d+) \(by", user_text(r))[1]) for r in server.requests]  # type: ignore[index]
    assert asked == [1, 2, 3, 5, 7, 9, 10, 11, 13]


# -- 6. one bad field does not cost the answer ---------------------------------------------


# (the planner's step 1, where no detector found a mode: one found at the blamed
# step comes before the model's, test_model_modes)
PLANNER = {"agent": "planner", "step": 1, "evidence": []}


def test_an_unknown_failure_mode_keeps_the_agent_and_step() -> None:
    report, requests = one_pass(answer(failure_mode="date_format_error", **PLANNER))
    assert len(requests) == 1  # no repair round, no fallback to the heuristic
    root = report.root_cause
    assert root is not None and root.strategy == "all-at-once"
    assert (root.agent_name, root.step_index, root.mode_id) == ("planner", 1, None)
    assert any("'date_format_error' is not in the taxonomy" in n for n in report.notes)
    assert not any("heuristic" in n for n in report.notes)


@pytest.mark.parametrize(
    ("given", "mode"),
    [("malformed_tool_call", "action.malformed_tool_call"), ("Wrong tool", "action.wrong_tool")],
)
def test_a_failure_mode_without_its_category_or_by_name_is_matched(given: str, mode: str) -> None:
    report, requests = one_pass(answer(failure_mode=given, **PLANNER))
    root = report.root_cause
    assert root is not None and root.strategy == "all-at-once" and len(requests) == 1
    assert root.mode_id == mode


def test_a_step_as_text_and_a_percentage_confidence_are_read() -> None:
    report, requests = one_pass(answer(step="3", confidence=85))
    assert len(requests) == 1
    root = report.root_cause
    assert root is not None and root.strategy == "all-at-once"
    assert root.step_index == 3 and root.confidence == 0.85
    assert any("confidence 85 was read as a percentage, 0.85" in n for n in report.notes)
    text = render(report, EXAMPLE, "text")
    assert "confidence 0.85 (by all-at-once" in text


def judge_reply(*findings: dict[str, Any]) -> str:
    return json.dumps({"findings": list(findings)})


def finding(step: Any, mode: str = "action.fabricated_action", **extra: Any) -> dict[str, Any]:
    return {
        "step": step,
        "failure_mode": mode,
        "description": "invented a fare",
        "evidence": "UA 1234 at $189",
        "confidence": 0.8,
        **extra,
    }


def judged(reply: str) -> tuple[Any, list[Any]]:
    with ScriptedServer([reply]) as server:
        report = diagnose(EXAMPLE, judge=True, settings=settings_for(server))
    assert len(server.requests) == 1  # no repair round
    return report, [f for f in report.findings if f.detector == "llm-judge"]


def test_one_judge_finding_at_an_impossible_step_leaves_the_others() -> None:
    report, found = judged(judge_reply(finding(9), finding(99)))
    assert [(f.step_index, f.mode_id) for f in found] == [(9, "action.fabricated_action")]
    assert any("item 2 of the answer's findings was left out" in n for n in report.notes)
    assert any("step 99 is not one of the steps" in n for n in report.notes)


def test_one_judge_finding_with_an_unknown_mode_leaves_the_others() -> None:
    report, found = judged(judge_reply(finding(9, mode="made_up"), finding("10", confidence=70)))
    assert [(f.step_index, f.agent_name, f.confidence) for f in found] == [(10, "planner", 0.7)]
    assert any("'made_up' is not one of the failure modes" in n for n in report.notes)


def test_a_repair_message_lists_every_valid_step_and_failure_mode() -> None:
    """An answer that cannot be mended (a step that is not in the run) is asked
    again, listing every valid step; a refused failure mode lists every mode,
    whole (before, the list was cut mid-word at 1,000 characters)."""
    with ScriptedServer([answer(step=42), answer(step=5)]) as server:
        report = diagnose(EXAMPLE, attributor="all-at-once", settings=settings_for(server))
    assert report.root_cause is not None and report.root_cause.step_index == 5
    repair = server.requests[1]["messages"][-1]["content"]
    assert "step: must be one of the steps: 1–3, 5, 7, 9–11, 13 (got 42)" in repair
    modes = mode_ids()
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(_enum(modes)).validate_python("date_format_error")
    message = repair_message(describe_errors(caught.value))
    assert "…" not in message
    for mode in modes:
        category, name = mode.split(".", 1)
        assert re.search(rf"{re.escape(category)}\.\{{[^}}]*\b{re.escape(name)}\b", message), mode


# -- 7. an agent that did not act there ----------------------------------------------------


def test_naming_an_agent_that_did_not_act_at_the_step_halves_the_confidence() -> None:
    """The model blames booker at step 3, where searcher acted: both are kept (Who&When
    scores them apart), but the claim no longer reads as 0.90, the report says why,
    and the fix goes to the agent who acted."""
    report, _ = one_pass(answer(agent="booker"))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("booker", 3)
    assert root.confidence == 0.45
    assert "confidence halved: the answer names booker, but at step 3 it was searcher" in (
        root.rationale
    )
    assert "(At step 3 it was searcher that acted, not booker.)" in report.summary
    assert report.fix is not None and report.fix.directive.startswith("At step 3, searcher:")


def test_an_agent_that_is_not_in_the_run_is_read_as_the_one_acting() -> None:
    report, requests = one_pass(answer(agent="FlightSearchAgent"))
    assert len(requests) == 1
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 3)
    assert root.confidence == 0.45
    assert any("'FlightSearchAgent' is not in the run" in n for n in report.notes)


def test_a_judge_finding_whose_only_quote_is_from_another_step_loses_confidence() -> None:
    _, found = judged(judge_reply(finding(9, evidence='"date":"14/12/2026"')))
    (only,) = found
    assert only.confidence == pytest.approx(0.6)
    assert only.metadata["grounding"]["off_step"] == 1
    assert only.evidence[0].step_index == 3
    assert "not at the cited step 9" in (only.evidence[0].note or "")
    _, same = judged(judge_reply(finding(9)))
    assert same[0].confidence == pytest.approx(0.8)


# -- 8. the model's own fix, and a mode for every strategy ---------------------------------


def test_a_fix_that_names_what_the_run_holds_is_the_reports_fix() -> None:
    own = "Call search_fares again with date 2026-12-14, in YYYY-MM-DD form."
    report, requests = one_pass(answer(fix=own))
    assert '"fix": one concrete instruction' in user_text(requests[0])
    assert report.fix is not None and report.fix.directive == own
    assert f"Fix: {own}" in render(report, EXAMPLE, "text")


def test_a_fix_in_prose_that_names_what_the_run_holds_is_kept() -> None:
    """A name inside a sentence counts as much as an identifier: "search flights to
    Denver" names the run's city (before, a prose fix for a content error was set
    aside for the mode's canned remedy); a name the run does not hold does not."""
    own = "Have the searcher look for nonstop flights from Boston to Denver again."
    report, _ = one_pass(answer(fix=own))
    assert report.fix is not None and report.fix.directive == own
    report, _ = one_pass(answer(fix="Have the searcher look for flights to Tokyo instead."))
    assert report.fix is not None and "Tokyo" not in report.fix.directive
    # a word opening a clause is no name, and a term is matched as a whole word
    # ("Check" is not the run's "checkout")
    report, _ = one_pass(answer(fix="Be careful, Check everything twice."))
    assert report.fix is not None and "Check everything" not in report.fix.directive
    own = "Search again with the destination: Denver."  # (a name after a colon counts)
    report, _ = one_pass(answer(fix=own))
    assert report.fix is not None and report.fix.directive == own


def test_a_fix_that_names_nothing_in_the_run_gives_way_to_the_modes_remedy() -> None:
    report, _ = one_pass(answer(fix="Be more careful next time."))
    assert report.fix is not None
    assert report.fix.directive == (  # (made concrete with the call that failed)
        'At step 3, searcher: search_fares({"date":"14/12/2026","destination":"DEN",'
        '"nonstop":true,"origin":"BOS"}) failed: "ValidationError: date must be YYYY-MM-DD, '
        "got '14/12/2026'\". The agent made the same call 2 more times after it failed. "
        "Call the tool again with arguments that match its schema exactly."
    )
    root = report.root_cause
    assert root is not None and "names nothing the run holds" in root.metadata["fix_set_aside"]


def test_step_by_step_uses_the_fix_of_the_decisive_step() -> None:
    def script(request: dict[str, Any]) -> str:
        step = int(re.search(r"is step (\d+) \(by", user_text(request))[1])  # type: ignore[index]
        return json.dumps(
            {
                "decisive": step == 3,
                "error_probability": 0.9 if step == 3 else 0.1,
                "failure_mode": "action.malformed_tool_call" if step == 3 else None,
                "reason": "r",
                "evidence": "",
                "fix": "Send date 2026-12-14 to search_fares." if step == 3 else "",
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(EXAMPLE, attributor="step-by-step", settings=settings_for(server))
    assert (
        report.fix is not None and report.fix.directive == "Send date 2026-12-14 to search_fares."
    )


def halving(target: int) -> Any:
    def script(request: dict[str, Any]) -> str:
        text = user_text(request)
        first = re.search(r"The first part is steps? (\d+)(?:–(\d+))?;", text)
        assert first is not None
        lo, hi = int(first[1]), int(first[2] or first[1])
        final = "This is the last question" in text
        return json.dumps(
            {
                "half": "first" if lo <= target <= hi else "second",
                "reason": "r",
                "evidence": "",
                "confidence": 0.8,
                **({"failure_mode": "reflection.flawed_reasoning"} if final else {}),
            }
        )

    return script


def test_binary_search_takes_its_mode_from_the_rules_finding_at_the_step() -> None:
    """The search ends at step 3; the rules found a malformed call in the output it
    produced (step 4): that is the mode, and the report has a Fix line (before,
    binary search set no mode and the report had no fix)."""
    with ScriptedServer(halving(3)) as server:
        report = diagnose(EXAMPLE, attributor="binary-search", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == 3 and root.strategy == "binary-search"
    assert root.mode_id == "action.malformed_tool_call"
    assert report.fix is not None and report.fix.directive.startswith("At step 3, searcher:")


def test_binary_search_asks_for_the_mode_in_its_last_call_when_no_detector_found_one() -> None:
    run = terminal_run()
    run = run.model_copy(update={"events": [*run.events, *terminal_run().events]})
    events = [
        e.model_copy(update={"id": f"x{i}", "step_index": i}) for i, e in enumerate(run.events)
    ]
    run = run.model_copy(update={"events": events})
    with ScriptedServer(halving(1)) as server:
        report = diagnose(run, attributor="binary-search", settings=settings_for(server))
    last = user_text(server.requests[-1])
    assert "This is the last question" in last and "reflection.flawed_reasoning" in last
    assert "This is the last question" not in user_text(server.requests[0])
    root = report.root_cause
    assert root is not None and root.step_index == 1
    assert root.mode_id == "reflection.flawed_reasoning"
    assert report.fix is not None and report.fix.directive.startswith("At step 1, Coder_Expert:")


def test_lifecycle_names_a_mode_and_a_fix_for_its_answer() -> None:
    """One candidate, no final call: the mode is the rules' finding at its step."""
    trigger = {
        "step": 3,
        "conflict": "task",
        "phase": "act",
        "object": "date format",
        "wrong_quote": '"date":"14/12/2026"',
        "reference_quote": "on 2026-12-14",
        "description": "the date is written DD/MM/YYYY",
        "relied_on": [5],
    }

    def script(request: dict[str, Any]) -> str:
        text = user_text(request)
        m = re.search(r"Steps (\d+) to (\d+) are shown", text)
        assert m is not None
        inside = int(m[1]) <= 3 <= int(m[2])
        return json.dumps({"triggers": [trigger] if inside else [], "updates": []})

    with ScriptedServer(script) as server:
        report = diagnose(EXAMPLE, attributor="lifecycle", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == 3 and root.strategy == "lifecycle"
    assert root.mode_id == "action.malformed_tool_call"
    assert report.fix is not None and "Fix: At step 3, searcher:" in render(report, EXAMPLE, "text")


def test_a_react_step_that_runs_its_own_action_stays_a_decision() -> None:
    """A hand-written ReAct node: the model says "Action: read_file[...]" (no
    tool_calls) and the node runs it, in one step. Its result answers no earlier
    call, so the step is the agent's decision, offered to the model as before."""
    from agentdebug.attribute.model_common import TraceFacts

    def e(i: str, kind: EventType, step: int, **kw: Any) -> AgentEvent:
        return AgentEvent(id=i, type=kind, step_index=step, agent_name="analyst", **kw)

    run = AgentTrajectory(
        id="react",
        goal="Sum Q3",
        events=[
            e("s1", EventType.AGENT_START, 1),
            e(
                "m1",
                EventType.LLM_RESPONSE,
                1,
                output="Thought: read it. Action: read_file[q3.csv]",
            ),
            e("r1", EventType.TOOL_RESULT, 1, output="a,b\n1,2"),
            e("x1", EventType.AGENT_END, 1),
            e("m2", EventType.LLM_RESPONSE, 2, output="The sum is 3."),
        ],
    )
    assert TraceFacts.of(run).agent_at == {1: "analyst", 2: "analyst"}
