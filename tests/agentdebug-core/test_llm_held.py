"""A model client held back (:mod:`agentdebug.llm.held`): after a server no attempt
reached, later calls fail at once, unsent, for a while, saying so; a dropped
connection was a server reached; answers the cache holds are still given."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from agentdebug.audit import audit_scope
from agentdebug.llm import LLMCallFailed, LLMClient, LLMSettings
from agentdebug.llm import held as held_module
from agentdebug.llm.testing import Reply, ScriptedServer
from agentdebug.schema import Cost
from test_llm_client import GOOD, ask, settings_for


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays the client asked for, without waiting for them."""
    from agentdebug.llm import client as client_module

    asked: list[float] = []
    monkeypatch.setattr(client_module, "sleep", asked.append)
    return asked


def test_a_server_no_attempt_reached_is_not_asked_again_for_a_while(
    sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app whose every failing run is diagnosed: with the model server not started,
    each run waited through all its retries (7 s at the defaults); now the next call
    fails at once, unsent, saying why, until UNREACHABLE_MEMORY has passed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = LLMSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    client = LLMClient(settings)
    with pytest.raises(LLMCallFailed):
        ask(client)
    waited = len(sleeps)
    with audit_scope() as log, pytest.raises(LLMCallFailed) as held:
        ask(client)
    assert "not sent: " in str(held.value) and "could not be reached 0 s ago" in str(held.value)
    assert held.value.attempts == 0
    assert len(sleeps) == waited  # (no retries waited for)
    assert [e.outcome for e in log.entries] == ["unsent"]  # (no call: not counted as one)
    assert "not sent: " in (log.entries[0].detail or "")
    assert Cost.of(list(log.entries)).calls == 0
    monkeypatch.setattr(held_module, "UNREACHABLE_MEMORY", 0.0)
    with audit_scope() as log, pytest.raises(LLMCallFailed):
        ask(client)  # (tried again once it is forgotten)
    assert [e.outcome for e in log.entries] == ["retry", "retry", "error"]


def test_a_server_that_dropped_the_connection_was_reached_and_is_asked_again(
    sleeps: list[float],
) -> None:
    """A server that reads the request and closes the connection was reached: the
    next call is sent (only a connection never made holds a client back)."""

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(65536))

    threading.Thread(target=serve, daemon=True).start()
    port = server.getsockname()[1]
    settings = LLMSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    client = LLMClient(settings)
    try:
        for _ in range(2):
            with pytest.raises(LLMCallFailed) as err:
                ask(client)
            assert err.value.attempts == 1 and "not sent" not in str(err.value)
    finally:
        server.close()
    assert len(seen) == 2


def test_a_held_back_client_still_answers_from_its_cache(tmp_path: Path) -> None:
    """After a 401 holds the client back, a question answered before is still
    answered from the cache (it is no request); a new one is not sent."""
    other = [{"role": "user", "content": "Which half now?"}]
    replies = [Reply(GOOD), Reply("Incorrect API key provided", status=401)]
    with ScriptedServer(replies) as server:
        client = LLMClient(settings_for(server, cache_path=str(tmp_path / "c.db")))
        live = ask(client)
        with pytest.raises(LLMCallFailed, match="Incorrect API key"):
            ask(client, other)
        assert ask(client).value == live.value  # (from the cache)
        with pytest.raises(LLMCallFailed, match="Incorrect API key"):
            ask(client, other)
        assert len(server.requests) == 2
