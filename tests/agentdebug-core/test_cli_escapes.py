"""Control characters a run recorded (a bell, a terminal escape, a right-to-left
override) print as escapes in every command, as `show` and `list` print them."""

from __future__ import annotations

from pathlib import Path

from agentdebug import AgentDebug, EventType
from conftest import run_cli

RAW = ("\x07", "\x1b", "\x00", "\u202e")


def _record(home: Path) -> None:
    dbg = AgentDebug(str(home))
    with dbg.trace(goal="Refund\nan order \x07", framework="shop", run_id="odd-run") as t:
        t.record(EventType.PLAN, agent_name="plan\x07ner", output="go\x00 \u202e now")
        t.record(
            EventType.TOOL_RESULT, agent_name="clerk\x1b[2J", error="TimeoutError: \x1b[31mslow"
        )
        t.set_outcome("failure", reason="no refund")
    with dbg.trace(goal="Refund", framework="shop", run_id="plain-run") as t:
        t.record(EventType.PLAN, agent_name="planner", output="go")
        t.set_outcome("success")
    dbg.close()


def _escaped(text: str) -> None:
    for raw in RAW:
        assert raw not in text, repr(text)


def test_diff_escapes_recorded_control_characters(home: Path) -> None:
    _record(home)
    result = run_cli("diff", "odd-run", "plain-run")
    assert result.returncode == 0, result.stderr
    _escaped(result.stdout)  # (before: the bell rang, the screen was cleared)
    assert "plan\\x07ner: go\\x00 \\u202e now" in result.stdout
    assert "clerk\\x1b[2J" in result.stdout


def test_act_escapes_recorded_control_characters(home: Path) -> None:
    _record(home)
    result = run_cli("act", "odd-run")
    assert result.returncode == 0, result.stderr
    _escaped(result.stdout)
    assert "Directive: At step 1, clerk\\x1b[2J:" in result.stdout


def test_markdown_escapes_them_and_keeps_the_goal_on_its_line(home: Path) -> None:
    _record(home)
    result = run_cli("diagnose", "odd-run", "--format", "md", "--no-store")
    assert result.returncode == 0, result.stderr
    _escaped(result.stdout)
    # (before: the goal's newline ended the bullet list mid-goal)
    assert "- **Goal:** Refund an order \\x07\n" in result.stdout
    assert "| clerk\\x1b[2J |" in result.stdout
