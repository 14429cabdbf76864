"""Test support for agentdebug and its plugins: a private, model-free environment.

Every package's test suite wants the same isolation: its own store home, no model
settings from the machine (environment variables or the user's config file), and
a plugin registry and model clients built afresh. ``isolated`` does all of it:

    @pytest.fixture(autouse=True)
    def _home(tmp_path, monkeypatch):
        with isolated(tmp_path, monkeypatch) as home:
            yield home
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from agentdebug.llm import reset_clients
from agentdebug.llm.config import FIELDS, env_name
from agentdebug.plugins import reset_registry

#: Environment variables through which a model could be configured.
MODEL_ENV = (
    "AGENTDEBUG_MODEL",
    "AGENTDEBUG_BASE_URL",
    "AGENTDEBUG_API_KEY",
    "AGENTDEBUG_PROMPT_BUDGET",
    "OPENAI_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


T = TypeVar("T")


class EnvPatcher(Protocol):
    """What ``isolated`` needs of pytest's ``monkeypatch``."""

    def setenv(self, name: str, value: str, prepend: str | None = None) -> None: ...

    def delenv(self, name: str, raising: bool = True) -> None: ...


@contextmanager
def isolated(tmp_path: Path, monkeypatch: EnvPatcher) -> Iterator[Path]:
    """A private ``AGENTDEBUG_HOME`` under ``tmp_path`` (yielded), no model settings,
    OpenTelemetry off, and a fresh registry and clients before and after."""
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTDEBUG_HOME", str(home))
    monkeypatch.setenv("AGENTDEBUG_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    for var in (*MODEL_ENV, *(env_name(key) for key in FIELDS)):  # (every model setting)
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    reset_clients()
    try:
        yield home
    finally:
        reset_registry()
        reset_clients()


def finishes_within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``'s result, or an AssertionError if it has not returned after
    ``seconds``: a test for code that once hung (an exponential walk, a lost
    wake-up) fails instead of holding the suite forever. ``work`` runs on a daemon
    thread; its exception is raised here."""
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="finishes-within", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"still running after {seconds:g} s: it hangs")
    if failed:
        raise failed[0]
    return done[0]
