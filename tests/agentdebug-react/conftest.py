"""Shared fixtures: a private store per test, no model settings, a fresh plugin registry,
and a tiny scripted ReAct agent whose first decision decides the run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.testing import isolated
from agentdebug_react import Message, ReactLoop, Step, StepContext

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets its own AGENTDEBUG_HOME and no model settings from the machine."""
    with isolated(tmp_path, monkeypatch) as home:
        yield home


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[AgentDebug]:
    debugger = AgentDebug(tmp_path / "store")
    yield debugger
    debugger.close()


class Counter:
    """A step function for tests: looks things up until it has the answer.

    Without a directive it looks up ``wrong`` first (the decisive mistake, a tool
    error); with "look up right" anywhere in its messages it looks up ``right``.
    It records every message list it was called with, so tests can see what the
    model saw."""

    def __init__(self, *, fail_at: int | None = None) -> None:
        self.seen: list[list[Message]] = []
        self.directives: list[str | None] = []
        self.fail_at = fail_at

    def __call__(self, ctx: StepContext[Any]) -> Step:
        self.seen.append([dict(m) for m in ctx.messages])
        self.directives.append(ctx.directive)
        if self.fail_at is not None and ctx.step == self.fail_at:
            raise RuntimeError(f"model crashed at step {ctx.step}")
        said = " ".join(str(m.get("content")) for m in ctx.messages)
        observations = [m for m in ctx.messages if m.get("role") == "tool"]
        if not observations:
            key = "right" if "look up right" in said else "wrong"
            step = Step(
                thought=f"I will look up {key}.", action="lookup", action_input={"key": key}
            )
            if key == "wrong":
                step.observation = "Error: KeyError: 'wrong' not found"
                step.error = "KeyError: 'wrong' not found"
            else:
                step.observation = "42"
        elif len(observations) == 1:
            answer = "42" if observations[0]["content"] == "42" else "0"
            return Step(thought="I can answer now.", final_answer=answer)
        else:  # pragma: no cover - the scenario never gets here
            return Step.finish("unknown")
        ctx.messages.append({"role": "assistant", "content": f"lookup {step.action_input}"})
        ctx.messages.append({"role": "tool", "content": str(step.observation)})
        if isinstance(ctx.state, dict):
            ctx.state["lookups"] = ctx.state.get("lookups", 0) + 1
        return step


def make_counter_loop(
    dbg: AgentDebug, step: Counter | None = None, **options: Any
) -> ReactLoop[Any]:
    options.setdefault("success", lambda answer: answer == "42")
    options.setdefault("max_steps", 5)
    return ReactLoop(step or Counter(), debugger=dbg, **options)
