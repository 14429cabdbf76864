"""OpenLLMetry's (Traceloop's) OTLP export: its flat GenAI attributes and its own span
kinds. A review found a model's tool calls imported as ``[{}]``, their names and
arguments lost, and its workflow and tool spans read as plain spans, so the
failure after a refused payment was never checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentdebug.diagnose import diagnose
from agentdebug.io import OtlpImporter, import_file
from agentdebug.schema import EventType


def _attrs(**values: Any) -> list[dict[str, Any]]:
    def value(v: Any) -> dict[str, Any]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    return [{"key": k.replace("__", "."), "value": value(v)} for k, v in values.items()]


def _span(sid: str, parent: str | None, name: str, at: int, **attrs: Any) -> dict[str, Any]:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + at * 1_000_000_000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + at * 1_000_000_000 + 500_000_000),
        "attributes": _attrs(**attrs),
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def export(tmp_path: Path) -> Path:
    flow = {"traceloop__span__kind": "workflow", "traceloop__entity__name": "refund_flow"}
    spans = [
        _span("a1", None, "refund_flow.workflow", 0, **flow,
              traceloop__entity__input=json.dumps({"args": ["Refund order 991"], "kwargs": {}}),
              traceloop__entity__output=json.dumps("Refund issued.")),
        _span("b2", "a1", "openai.chat", 1, gen_ai__system="openai",
              gen_ai__request__model="gpt-4o-mini", gen_ai__prompt__0__role="user",
              gen_ai__prompt__0__content="Refund order 991",
              gen_ai__completion__0__role="assistant",
              gen_ai__completion__0__finish_reason="tool_calls",
              gen_ai__completion__0__tool_calls__0__name="issue_refund",
              gen_ai__completion__0__tool_calls__0__arguments='{"order_id": "991"}',
              gen_ai__usage__prompt_tokens=50, gen_ai__usage__completion_tokens=10),
        _span("c3", "a1", "issue_refund.tool", 2, traceloop__span__kind="tool",
              traceloop__entity__name="issue_refund",
              traceloop__entity__input=json.dumps({"args": [], "kwargs": {"order_id": "991"}})),
        _span("d4", "a1", "openai.chat", 3, gen_ai__request__model="gpt-4o-mini",
              gen_ai__completion__0__role="assistant",
              gen_ai__completion__0__content="Refund issued."),
    ]  # fmt: skip
    spans[2]["status"] = {"code": 2, "message": "PaymentDeclined: card declined"}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    path = tmp_path / "openllmetry.json"
    path.write_text(json.dumps(doc))
    return path


def test_an_openllmetry_export_keeps_its_tool_calls_agent_and_answer(tmp_path: Path) -> None:
    (imported,) = import_file(export(tmp_path), importers=[OtlpImporter()])
    run = imported.trajectory
    calls = [e for e in run.events if e.type is EventType.LLM_CALL]
    assert calls[0].output["tool_calls"] == [
        {"name": "issue_refund", "arguments": {"order_id": "991"}}
    ]
    assert calls[0].metadata["tokens"] == {"prompt": 50, "completion": 10}
    (tool,) = [e for e in run.events if e.type is EventType.TOOL_CALL]
    assert tool.metadata["tool_name"] == "issue_refund" and tool.input == {"order_id": "991"}
    assert {e.agent_name for e in run.events} == {"refund_flow"}
    assert run.events[-1].type is EventType.FINAL_ANSWER
    kinds = {f.mode_id for f in diagnose(run).findings}
    assert "verification.premature_success" in kinds  # ("Refund issued." after the decline)


def test_a_tool_call_of_a_shape_not_known_is_kept_as_it_came(tmp_path: Path) -> None:
    path = export(tmp_path)
    text = path.read_text().replace("tool_calls.0.name", "tool_calls.0.tool")
    path.write_text(text.replace("tool_calls.0.arguments", "tool_calls.0.input"))
    (imported,) = import_file(path, importers=[OtlpImporter()])
    run = imported.trajectory
    call = next(e for e in run.events if e.type is EventType.LLM_CALL)
    assert call.output["tool_calls"] == [{"tool": "issue_refund", "input": '{"order_id": "991"}'}]
