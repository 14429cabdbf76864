"""Shared fixtures: a private store home per test, the benchmark data location."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentdebug.schema import AgentEvent, AgentTrajectory, ErrorInfo, EventType
from agentdebug.testing import isolated

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
EXAMPLES = REPO / "examples"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets its own AGENTDEBUG_HOME, no model settings from the machine
    (environment or the user's config file), and a freshly built registry."""
    with isolated(tmp_path, monkeypatch) as home:
        yield home


@pytest.fixture
def home(_home: Path) -> Path:
    return _home


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The real `agentdebug` command in a subprocess, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )


def ev(i: int, type_: EventType, agent: str | None, **kw: Any) -> AgentEvent:
    """An event with id ``e<i>`` at step ``i`` (an ``error`` given as text made one)."""
    if isinstance(kw.get("error"), str):
        kw["error"] = ErrorInfo(message=kw["error"])
    return AgentEvent(id=f"e{i}", type=type_, step_index=i, agent_name=agent, **kw)


def node(i: int, agent: str, output: Any) -> list[AgentEvent]:
    """A graph node's run at step ``i``: its start (``s<i>``) and its end (``e<i>``,
    the update ``output``)."""
    start = ev(i, EventType.AGENT_START, agent).model_copy(update={"id": f"s{i}"})
    return [start, ev(i, EventType.AGENT_END, agent, output=output, parent_id=f"s{i}")]


def traj(*events: AgentEvent) -> AgentTrajectory:
    return AgentTrajectory(id="t", goal="g", events=list(events))
