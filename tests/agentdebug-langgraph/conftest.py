"""Fixtures: a private agentdebug home per test, no model settings from the machine,
OpenTelemetry off, a fresh plugin registry, and nothing left instrumented."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentdebug import AgentDebug
from agentdebug.testing import isolated

os.environ.setdefault("OTEL_SDK_DISABLED", "true")


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with isolated(tmp_path, monkeypatch) as home:
        yield home
        from agentdebug_langgraph import uninstrument

        uninstrument()


@pytest.fixture
def dbg(_home: Path) -> Iterator[AgentDebug]:
    debugger = AgentDebug(_home)
    yield debugger
    debugger.close()
