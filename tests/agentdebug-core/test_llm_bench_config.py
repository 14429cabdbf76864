"""`agentdebug bench` against a model endpoint that cannot answer: a dead
configuration stops the run with an error, and a table where no trace was
answered is a failed command, never a table of zeros that exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug.bench import run_whowhen
from agentdebug.bench.metrics import BenchStopped
from agentdebug.llm import LLMSettings, reset_clients
from agentdebug.llm.testing import Reply, ScriptedServer
from conftest import DATA, run_cli

HAND = DATA / "whowhen" / "Hand-Crafted"
pytestmark = pytest.mark.skipif(not HAND.is_dir(), reason="../shared/data not present")
FILES = [str(HAND / name) for name in ("1.json", "11.json", "13.json")]


def bench_cli(server: ScriptedServer, *extra: str) -> tuple[int, str]:
    result = run_cli(
        "bench",
        "whowhen",
        *FILES,
        "--attributor",
        "all-at-once",
        "--model",
        "scripted",
        "--base-url",
        server.base_url,
        "--api-key",
        "sk-bad",
        "--no-cache",
        *extra,
    )
    return result.returncode, result.stdout + result.stderr


def test_a_rejected_key_stops_the_benchmark_with_an_error() -> None:
    with ScriptedServer(lambda _r: Reply("Incorrect API key provided", status=401)) as server:
        code, out = bench_cli(server, "--workers", "2")
        sent = len(server.requests)
    assert code != 0
    assert "error: benchmark stopped at trace Hand-Crafted/" in out
    assert "HTTP 401: Incorrect API key provided" in out and "check the API key" in out
    assert "Who&When, attributor" not in out  # no table of zeros
    assert sent <= 2  # one per worker at most, not one per trace


def test_run_whowhen_raises_on_a_wrong_base_url() -> None:
    reset_clients()
    with ScriptedServer(lambda _r: Reply(status=404)) as server:
        settings = LLMSettings(model="scripted", base_url=server.base_url, cache=False)
        with pytest.raises(BenchStopped) as caught:
            run_whowhen(FILES, attributor="all-at-once", settings=settings)
        assert len(server.requests) == 1
    reset_clients()
    assert "ends in /v1" in str(caught.value)


def test_a_benchmark_where_no_trace_was_answered_exits_non_zero(tmp_path: Path) -> None:
    with ScriptedServer(lambda _r: "I cannot tell.") as server:
        code, out = bench_cli(server, "--output", str(tmp_path / "out.json"))
    assert code != 0
    assert "error: no trace was answered (all 3 failed)" in out
    assert (tmp_path / "out.json").exists()  # the results are still written
