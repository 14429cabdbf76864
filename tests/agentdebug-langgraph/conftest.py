"""Fixtures: a private agentdebug home per test, no model settings from the machine,
OpenTelemetry off, a fresh plugin registry, and nothing left instrumented."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentdebug import AgentDebug
from agentdebug.plugins import reset_registry

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

MODEL_ENV = (
    "AGENTDEBUG_MODEL",
    "AGENTDEBUG_BASE_URL",
    "AGENTDEBUG_API_KEY",
    "OPENAI_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTDEBUG_HOME", str(home))
    monkeypatch.setenv("AGENTDEBUG_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    for var in MODEL_ENV:
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield home
    from agentdebug_langgraph import uninstrument

    uninstrument()
    reset_registry()


@pytest.fixture
def dbg(_home: Path) -> Iterator[AgentDebug]:
    debugger = AgentDebug(_home)
    yield debugger
    debugger.close()
