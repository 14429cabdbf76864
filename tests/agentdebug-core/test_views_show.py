"""What `agentdebug show`, `list` and the text report print for a person: payloads
with their keys and nulls, truncation said plainly, tool calls as calls (a failed
one with its arguments), the model behind a model-made diagnosis, and no control
character reaching the terminal."""

from __future__ import annotations

import json
from pathlib import Path

from agentdebug import AgentDebug
from agentdebug.report import event_line, render, render_run
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    AuditEntry,
    DiagnosticReport,
    ErrorInfo,
    EventType,
    Hypothesis,
)
from agentdebug.views import Granularity, render_step, steps_of
from click.testing import CliRunner
from conftest import ev, traj


def _result(i: int, output: object) -> AgentEvent:
    return ev(i, EventType.TOOL_RESULT, "a", output=output)


def test_show_gives_an_objects_keys_and_its_nulls() -> None:
    assert event_line(_result(0, {"ok": True, "count": 0, "items": []}), 100) == (
        "ok=true, count=0, items=[]"
    )
    assert event_line(_result(1, {"price": None, "stock": None}), 100) == "price=null, stock=null"
    nested = {"error": None, "result": {"id": 7, "name": "two words"}}
    assert event_line(_result(2, nested), 100) == 'error=null, result={id=7, name="two words"}'
    run = traj(_result(0, {"price": None, "stock": None}), _result(1, {"status": "ok"}))
    shown = render_run(run).splitlines()
    assert "        price=null, stock=null" in shown and "        status=ok" in shown


def test_show_says_a_truncated_payload_was_truncated() -> None:
    marker = {"truncated": True, "original_bytes": 20_971_522, "head": "x" * 500}
    line = event_line(_result(0, marker), 100)
    assert line.startswith("[truncated: 20,971,522 bytes] xxxx")
    assert "True" not in line and "20971522" not in line
    assert len(line) <= 100
    # a key cut at capture, beside kept ones
    line = event_line(_result(1, {"status": 200, "body": marker}), 100)
    assert line.startswith("status=200, body=[truncated: 20,971,522 bytes] xxx")


def test_a_model_reply_that_called_tools_reads_as_the_calls() -> None:
    reply = {
        "content": None,
        "tool_calls": [
            {"name": "search_fares", "arguments": {"date": "14/12/2026", "origin": "BOS"}}
        ],
    }
    call = ev(1, EventType.LLM_CALL, "TravelAgent", output=reply)
    assert event_line(call, 100) == 'search_fares({"date":"14/12/2026","origin":"BOS"})'
    openai = {
        "role": "assistant",
        "content": "Searching.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"order": "A1"}'},
            },
        ],
    }
    said = ev(2, EventType.LLM_RESPONSE, "agent", output=openai)
    assert event_line(said, 100) == 'Searching. → lookup({"order":"A1"})'
    # LangChain's messages (the LangGraph plugin's record) name the arguments "args"
    langchain = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "lookup", "args": {"email": "A123"}}],
    }
    asked = ev(3, EventType.LLM_RESPONSE, "agent", output=langchain)
    assert event_line(asked, 100) == 'lookup({"email":"A123"})'
    (step,) = steps_of(traj(asked))
    assert 'calls lookup({"email":"A123"})' in render_step(step, Granularity.MEDIUM)


def test_a_reply_in_content_blocks_shows_its_text_before_its_thinking() -> None:
    """A review: an Anthropic reply (a thinking block with its signature, then the
    text) showed the thinking and the signature, and the line ended before the
    reply's text."""
    blocks = [
        {"type": "thinking", "thinking": "The refund was approved.", "signature": "ErUB" * 40},
        {"type": "redacted_thinking", "data": "xyz" * 30},
        {"type": "text", "text": "Your refund of $42 was approved."},
    ]
    reply = {"role": "assistant", "content": blocks}
    line = event_line(ev(1, EventType.LLM_RESPONSE, "agent", output=reply), 100)
    assert line == "Your refund of $42 was approved. [thinking: The refund was approved.]"
    state = ev(1, EventType.AGENT_END, "agent", output={"messages": [reply]})
    assert event_line(state, 60).startswith("messages=[Your refund of $42 was approved.")
    thought = {"role": "assistant", "content": blocks[:1]}
    assert event_line(ev(2, EventType.LLM_RESPONSE, "a", output=thought), 100) == (
        "[thinking: The refund was approved.]"
    )
    # (a second review: other providers' reasoning blocks were dropped)
    for block in (
        {"type": "reasoning", "reasoning": "Refunds allowed."},  # LangChain's standard
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Refunds allowed."}]},
        {"type": "reasoning_content", "reasoning_content": {"text": "Refunds allowed."}},
    ):
        reply = {"role": "assistant", "content": [block, {"type": "text", "text": "Done."}]}
        line = event_line(ev(3, EventType.LLM_RESPONSE, "a", output=reply), 100)
        assert line == "Done. [thinking: Refunds allowed.]", block


def test_a_failed_tool_call_shows_its_arguments_and_its_error() -> None:
    failed = AgentEvent(
        id="e2",
        type=EventType.TOOL_CALL,
        step_index=2,
        agent_name="TravelAgent",
        module="search_fares",
        input={"date": "14/12/2026", "origin": "BOS"},
        metadata={"tool_name": "search_fares"},
        error=ErrorInfo(type="ValidationError", message="date must be YYYY-MM-DD"),
    )
    lines = render_run(traj(failed)).splitlines()
    i = lines.index('        search_fares({"date":"14/12/2026","origin":"BOS"})')
    assert lines[i + 1] == "        ✗ date must be YYYY-MM-DD"
    # smolagents (TRAIL) wraps arguments in args/kwargs: shown without the wrapper
    wrapped = failed.model_copy(
        update={"input": {"args": ["33149"], "kwargs": {}, "sanitize_inputs_outputs": False}}
    )
    assert event_line(wrapped, 100) == 'search_fares("33149") ✗ date must be YYYY-MM-DD'


def _model_made(run: AgentTrajectory) -> DiagnosticReport:
    root = Hypothesis(
        agent_name="executor",
        step_index=1,
        strategy="deepdebug",
        confidence=0.8,
        event_id="e1",
        metadata={"agent_acting_at_step": "planner"},
    )
    audit = [
        AuditEntry(stage="llm", strategy="deepdebug", model="probe-model", input_tokens=9),
        AuditEntry(stage="llm", strategy="judge", model="other-model"),
    ]
    return DiagnosticReport(
        id="r1",
        trajectory_id=run.id,
        hypotheses=[root],
        audit=audit,
        summary="Most likely root cause: executor at step 1.",
        metadata={"model": "probe-model"},
    )


def test_the_text_report_and_show_name_the_model_and_who_acted() -> None:
    run = traj(ev(0, EventType.USER_INPUT, None, input="q"), ev(1, EventType.PLAN, "planner"))
    report = _model_made(run)
    text = render(report, run, "text")
    assert "(by deepdebug, model probe-model)" in text
    assert "note: at step 1 it was planner that acted, not executor" in text
    md = render(report, run, "md")
    assert "(by deepdebug, model probe-model)" in md
    assert "| deepdebug, model probe-model |" in md
    assert "named by:  deepdebug, model probe-model" in render_run(run, reports=[report])
    # a strategy that called no model is named alone
    free = report.model_copy(update={"audit": []})
    assert "(by deepdebug)" in render(free, run, "text")


def test_control_characters_are_shown_as_escapes() -> None:
    run = AgentTrajectory(
        id="t",
        goal="book\x07 a \x1b[31mflight",
        events=[ev(0, EventType.MESSAGE, "evil\x1b[2Jagent", output="ding\x07 dong")],
    )
    for text in (render_run(run), render(DiagnosticReport(id="r", trajectory_id="t"), run)):
        assert "\x07" not in text and "\x1b" not in text
    shown = render_run(run)
    assert "goal:      book\\x07 a \\x1b[31mflight" in shown
    assert "evil\\x1b[2Jagent" in shown and "ding\\x07 dong" in shown


def test_list_keeps_its_columns_with_long_ids_and_escapes_control_characters(
    home: Path,
) -> None:
    from agentdebug.cli.app import cli

    store = AgentDebug(home).store
    assert store is not None
    for run_id, goal in [
        ("5b8efff798038103d269b633813fc60c", "otlp\x07 run"),
        ("trail-0035f455b3ff2295167a844f04d85d34", "trail run"),
        ("short", "a \x1b[31mred goal"),
    ]:
        store.save_trajectory(AgentTrajectory(id=run_id, goal=goal, framework="fw\x07", events=[]))
    out = CliRunner().invoke(cli, ["list"]).output
    assert "\x07" not in out and "\x1b" not in out
    lines = out.splitlines()
    assert lines[0].startswith("RUN ")
    columns = {line.index("STATUS" if i == 0 else "unknown") for i, line in enumerate(lines)}
    assert len(lines) == 4 and len(columns) == 1  # every status in the header's column
    assert any("otlp\\x07 run" in line for line in lines)
    assert any("fw\\x07" in line for line in lines)


def test_show_gives_the_system_prompt_of_an_imported_conversation(tmp_path: Path) -> None:
    """A system message is the agents' instructions: `show` prints it (before, it
    appeared nowhere in `show`)."""
    from agentdebug.io import import_file

    path = tmp_path / "conversation.json"
    messages = [
        {"role": "system", "content": "You are a travel agent.\nNever book without a date."},
        {"role": "user", "content": "Book BOS to DEN"},
        {"role": "assistant", "content": "Booked."},
    ]
    path.write_text(json.dumps({"messages": messages}))
    (run,) = import_file(path)
    shown = render_run(run.trajectory)
    assert "instructions (assistant): You are a travel agent. Never book without a date." in shown


def test_a_root_cause_in_the_runs_input_is_named_so_on_every_line() -> None:
    from agentdebug.diagnose import diagnose

    run = AgentTrajectory.model_validate(
        {
            "id": "input-fault",
            "events": [
                {
                    "id": "e0",
                    "type": "user.input",
                    "step_index": 0,
                    "output": "Pay",
                    "error": {"message": "ValueError: invoice id missing"},
                },
                {
                    "id": "e1",
                    "type": "final_answer",
                    "step_index": 1,
                    "agent_name": "w",
                    "output": "Done",
                },
            ],
            "outcome": {"status": "failure"},
        }
    )
    text = render(diagnose(run), run)
    assert "Root cause: the run's input at step 0" in text  # before: "unknown agent"
    assert "At step 0, the run's input:" in text


def test_instructions_only_one_agent_has_are_named_as_its() -> None:
    run = AgentTrajectory.model_validate(
        {
            "id": "two-agents",
            "agents": [
                {"name": "planner", "instructions": "Break it into steps."},
                {"name": "worker"},
            ],
            "events": [{"id": "e0", "type": "message", "step_index": 0, "agent_name": "worker"}],
        }
    )
    assert "instructions (planner): Break it into steps." in render_run(run)


def test_a_long_runs_steps_keep_the_agent_column_in_line() -> None:
    # Before: steps past 999 pushed their lines one character out of line.
    run = traj(*(ev(i, EventType.MESSAGE, "worker", output=f"m{i}") for i in (7, 99, 1200)))
    heads = [line for line in render_run(run).splitlines() if "worker" in line and "[" in line]
    assert len(heads) == 3, heads
    assert len({line.index("worker") for line in heads}) == 1, heads
