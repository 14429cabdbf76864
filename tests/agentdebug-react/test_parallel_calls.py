"""Parallel tool calls: a step whose model asked for several tools at once records each
call with its own result, the diagnosis names the call that failed, and the rerun
from that step corrects it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.rerun import closed_loop
from agentdebug_react import ReactLoop, Step, StepContext, ToolCall

BAD_DATE = "14/12/2026"


def fares(args: dict[str, Any]) -> str:
    if args["date"] != "2026-12-14":
        raise ValueError(f"ValidationError: date must be YYYY-MM-DD, got {args['date']!r}")
    return "OSL-BER 1,240 NOK"


def weather(args: dict[str, Any]) -> str:
    return f"{args['city']}: -3 C, snow"


TOOLS = {"fares": fares, "weather": weather}


def planner(ctx: StepContext[Any]) -> Step:
    """Asks for the weather and the fares at once; the date's format is the mistake,
    unless a directive told it the format."""
    if ctx.step == 1:
        said = " ".join(str(m.get("content")) for m in ctx.messages)
        date = "2026-12-14" if "YYYY-MM-DD" in said else BAD_DATE
        asked = [
            ("call_w", "weather", {"city": "Oslo"}),
            ("call_f", "fares", {"from": "OSL", "to": "BER", "date": date}),
        ]
        ctx.messages.append(
            {"role": "assistant", "content": "", "tool_calls": [a[0] for a in asked]}
        )
        calls = []
        for call_id, name, args in asked:
            try:
                out, error = TOOLS[name](args), None
            except Exception as exc:
                out, error = f"Error: {exc}", exc
            ctx.messages.append({"role": "tool", "tool_call_id": call_id, "content": out})
            calls.append(ToolCall(name, args, observation=out, error=error, id=call_id))
        return Step(thought="I need the weather and the fares.", calls=calls)
    priced = [m["content"] for m in ctx.messages if "NOK" in str(m.get("content"))]
    return Step.finish(priced[-1] if priced else "No fares found.")


def make_loop(dbg: AgentDebug) -> ReactLoop[Any]:
    return ReactLoop(planner, debugger=dbg, agent_name="planner", success=lambda a: "NOK" in str(a))


def test_each_call_is_recorded_with_its_own_result(dbg: AgentDebug) -> None:
    result = make_loop(dbg).run("Fly Oslo to Berlin on 14 December; how cold is Oslo?")

    run = result.trajectory()
    step1 = [e for e in run.events if e.step_index == 1]
    assert [e.type.value for e in step1] == [
        "checkpoint",
        "reasoning",
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.result",
    ]
    thought = step1[1]
    w_call, w_result, f_call, f_result = step1[2:]
    assert (w_call.module, w_call.input) == ("weather", {"city": "Oslo"})
    assert (f_call.module, f_call.input["date"]) == ("fares", BAD_DATE)
    assert w_call.parent_id == f_call.parent_id == thought.id
    assert w_result.parent_id == w_call.id and f_result.parent_id == f_call.id
    assert w_call.metadata["tool_call_id"] == w_result.metadata["tool_call_id"] == "call_w"
    assert f_result.metadata["tool_call_id"] == "call_f"
    assert w_result.error is None and w_result.output == "Oslo: -3 C, snow"
    assert f_result.error is not None and "YYYY-MM-DD" in f_result.error.message
    assert f_result.error.type == "ValueError"


def test_the_diagnosis_names_the_call_that_failed(dbg: AgentDebug) -> None:
    result = make_loop(dbg).run("Fly Oslo to Berlin on 14 December; how cold is Oslo?")

    assert result.ok is False and result.report is not None
    root = result.report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("planner", 1)
    fix = result.report.fix
    assert fix is not None and fix.target_step == 1
    assert "fares(" in fix.directive and BAD_DATE in fix.directive
    assert "weather(" not in fix.directive  # the call that worked is not blamed


def test_the_rerun_from_that_step_corrects_the_call(dbg: AgentDebug) -> None:
    loop = make_loop(dbg)
    result = loop.run("Fly Oslo to Berlin on 14 December; how cold is Oslo?")

    outcome = closed_loop(result.trajectory(), debugger=dbg, executor=loop.executor())

    assert outcome.status == "succeeded" and outcome.verified_by_rerun is True
    assert dbg.store is not None
    branch = dbg.store.load_trajectory(outcome.attempts[0].branch_id or "")
    assert branch.outcome.final_answer == "OSL-BER 1,240 NOK"
    redone = [e for e in branch.events if e.type is EventType.TOOL_CALL and e.module == "fares"]
    assert [e.input["date"] for e in redone] == ["2026-12-14"]


def test_every_failed_call_of_the_step_is_in_the_fix(dbg: AgentDebug) -> None:
    """Two of three parallel calls failed: a directive naming only one would send the
    rerun into the other."""

    def step(ctx: StepContext[Any]) -> Step:
        if ctx.step == 1:
            return Step(
                calls=[
                    ToolCall(
                        "hotels", {"city": "Berlin", "nights": -1}, error="nights must be > 0"
                    ),
                    ToolCall("weather", {"city": "Oslo"}, observation="-3 C"),
                    ToolCall("fares", {"date": BAD_DATE}, error="date must be YYYY-MM-DD"),
                ]
            )
        return Step.finish("No fares found.")

    loop = ReactLoop(step, debugger=dbg, agent_name="planner", success=lambda a: "NOK" in a)
    report = loop.run("Plan a trip").report
    assert report is not None and report.fix is not None
    root = report.root_cause
    assert root is not None and root.step_index == 1
    directive = report.fix.directive
    assert directive.count(" failed: ") == 2, directive
    assert 'hotels({"city":"Berlin","nights":-1}) failed: "nights must be > 0"' in directive
    assert 'fares({"date":"14/12/2026"}) failed: "date must be YYYY-MM-DD"' in directive
    assert "weather(" not in directive


def test_no_calls_given_as_none_is_a_step_without_calls(dbg: AgentDebug) -> None:
    # Before: the step's record failed on iterating None, and its final answer was lost.
    def step(ctx: StepContext[Any]) -> Any:
        return {"thought": "done", "calls": None, "final_answer": "42"}

    result = ReactLoop(step, debugger=dbg, success=lambda a: a == "42").run("q")
    assert (result.ok, result.answer) == (True, "42")
    assert result.trajectory().events[-1].type is EventType.FINAL_ANSWER


def test_a_mapping_with_a_bad_call_says_so_as_any_bad_mapping_does(dbg: AgentDebug) -> None:
    def step(ctx: StepContext[Any]) -> Any:
        return {"calls": [{"name": ""}]}

    with pytest.raises(TypeError) as raised:
        ReactLoop(step, debugger=dbg, auto_diagnose=False).run("q")
    assert str(raised.value) == (
        "the step function returned a mapping Step() refuses: Step.calls[0]: "
        "ToolCall.name must be a tool's name, got ''"
    )


def test_calls_may_be_given_as_mappings(dbg: AgentDebug) -> None:
    def step(ctx: StepContext[Any]) -> Step:
        return Step(
            calls=[{"name": "a", "input": 1, "observation": "x"}, {"name": "b", "error": "boom"}],
            final_answer="done",
        )

    run = ReactLoop(step, debugger=dbg).run("q").trajectory()
    results = [e for e in run.events if e.type is EventType.TOOL_RESULT]
    assert [(e.module, e.output) for e in results] == [("a", "x"), ("b", None)]
    assert results[1].error is not None and results[1].error.message == "boom"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"action": "a", "calls": [ToolCall("b")]}, "either action= (one tool call) or calls="),
        ({"calls": [ToolCall("a"), 3]}, "Step.calls[1] must be a ToolCall or a mapping, got int"),
        ({"calls": [{"name": "a", "argz": 1}]}, "Step.calls[0]: "),
        ({"calls": [{"name": ""}]}, "Step.calls[0]: ToolCall.name must be a tool's name"),
        ({"calls": "ab"}, "Step.calls must be a list of ToolCall, got str"),
    ],
)
def test_a_malformed_call_is_refused_where_the_step_is_made(
    kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        Step(**kwargs)
    assert says in str(raised.value)
