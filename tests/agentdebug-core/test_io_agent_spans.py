"""An agent span, imported from OTLP or Phoenix, reads as a LangGraph node does:
its start with what it was given, its end (after what it ran) with what it gave
back or how it failed; the top agent's answer is the run's final answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentdebug.io import builtin_importers, import_file
from agentdebug.schema import EventType
from conftest import run_cli

TRACE = "5b8efff798038103d269b633813fc60c"
FIXTURES = Path(__file__).parent / "fixtures" / "io"


def _value(value: Any) -> dict[str, Any]:
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


def _span(
    span_id: str, parent: str | None, name: str, second: int, length: int, **attrs: Any
) -> dict[str, Any]:
    start = 1_700_000_000 + second
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start * 10**9),
        "endTimeUnixNano": str((start + length) * 10**9),
        "attributes": [{"key": k.replace("__", "."), "value": _value(v)} for k, v in attrs.items()],
    }
    if parent:
        span["parentSpanId"] = parent
    if attrs.get("error"):
        span["status"] = {"code": 2, "message": attrs["error"]}
        span["attributes"] = [a for a in span["attributes"] if a["key"] != "error"]
    return span


def _trace(tmp_path: Path) -> Path:
    """A travel agent that hands the fare search to a planner agent, whose hotel
    helper agent fails, and then answers."""
    spans = [
        _span(
            "a000000000000001",
            None,
            "TravelAgent",
            0,
            60,
            openinference__span__kind="AGENT",
            input__value="Book a flight BOS to DEN",
            output__value="Booked UA 1 for 120 USD",
        ),
        _span(
            "a000000000000002",
            "a000000000000001",
            "planner",
            1,
            20,
            openinference__span__kind="AGENT",
            input__value="find the cheapest fare",
            output__value="UA 1 at 120 USD",
        ),
        _span(
            "a000000000000003",
            "a000000000000002",
            "search_fares",
            2,
            5,
            openinference__span__kind="TOOL",
            tool__name="search_fares",
            input__value={"from": "BOS", "to": "DEN"},
            output__value="UA 1: 120 USD",
        ),
        _span(
            "a000000000000004",
            "a000000000000001",
            "hotel_helper",
            30,
            5,
            openinference__span__kind="AGENT",
            input__value="find a hotel in Denver",
            error="HotelAPIError: no rooms",
        ),
        _span(
            "a000000000000005",
            "a000000000000001",
            "ChatOpenAI",
            40,
            5,
            openinference__span__kind="LLM",
            output__value="Let me write the answer.",
        ),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


def _shown(run_id: str) -> list[tuple[str, str, list[str]]]:
    """`agentdebug show`'s timeline: (agent, event label, the lines under it)."""
    result = run_cli("show", run_id)
    assert result.returncode == 0, result.stderr
    rows: list[tuple[str, str, list[str]]] = []
    for line in result.stdout.splitlines():
        head = re.match(r"^  \[\s*\d+\] (\S+)\s+(\S+)", line)
        if head:
            rows.append((head.group(1), head.group(2), []))
        elif rows and line.startswith("        "):
            rows[-1][2].append(line.strip())
    return rows


def test_show_gives_an_agent_its_input_at_the_start_and_its_output_at_the_end(
    tmp_path: Path,
) -> None:
    assert run_cli("ingest", str(_trace(tmp_path))).returncode == 0
    assert _shown(TRACE) == [
        # before: each agent.start showed the agent's output ("UA 1 at 120 USD")
        ("TravelAgent", "agent.start", ["Book a flight BOS to DEN"]),
        ("planner", "agent.start", ["find the cheapest fare"]),
        ("planner", "tool.call", ['search_fares({"from":"BOS","to":"DEN"})']),
        ("planner", "agent.end", ["UA 1 at 120 USD"]),
        ("hotel_helper", "agent.start", ["find a hotel in Denver"]),
        ("hotel_helper", "agent.end", ["✗ HotelAPIError: no rooms"]),
        ("TravelAgent", "llm.call", ["Let me write the answer."]),
        ("TravelAgent", "final_answer", ["Booked UA 1 for 120 USD"]),
    ]


def test_an_agent_end_links_to_its_start_and_carries_the_failure(tmp_path: Path) -> None:
    (run,) = import_file(_trace(tmp_path), importers=builtin_importers())
    t = run.trajectory
    by_id = {e.id: e for e in t.events}
    planner_end = by_id["a000000000000002/end"]
    assert planner_end.type is EventType.AGENT_END
    assert planner_end.parent_id == "a000000000000002"
    assert by_id["a000000000000002"].input == "find the cheapest fare"
    assert by_id["a000000000000002"].output is None
    helper_start, helper_end = by_id["a000000000000004"], by_id["a000000000000004/end"]
    assert helper_start.error is None
    assert helper_end.error is not None and helper_end.error.message == "HotelAPIError: no rooms"
    assert helper_start.timestamp is not None and helper_end.timestamp is not None
    assert (helper_end.timestamp - helper_start.timestamp).total_seconds() == 5  # its end
    # the top agent's output is the run's answer, said once, by the final answer
    assert "a000000000000001/end" not in by_id
    assert t.outcome.final_answer == "Booked UA 1 for 120 USD"


def test_a_phoenix_agent_starts_with_its_task() -> None:
    assert run_cli("ingest", str(FIXTURES / "phoenix_spans.jsonl")).returncode == 0
    shown = _shown(TRACE)
    assert shown[0] == ("TravelAgent", "agent.start", ["Book a nonstop flight BOS to DEN"])
    assert shown[-1] == ("TravelAgent", "final_answer", ["Your flight is booked!"])
