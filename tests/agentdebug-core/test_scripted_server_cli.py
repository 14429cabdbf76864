"""`agentdebug scripted-server --script FILE --log FILE`: a dry run of the model path
that says something. A review found the shipped server could not be scripted (it
answered every request with empty strings and confidence 0) nor show the prompts
agentdebug sends, so trying the model path offline meant writing Python."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.diagnose import diagnose
from agentdebug.llm import LLMSettings, use_settings
from agentdebug.llm.script_file import ASKED, ScriptError, load_script, logged
from agentdebug.llm.testing import ScriptedServer, schema_answerer
from agentdebug.recover import AutoManualRecoverer, CriticRecoverer, ReflexionRecoverer
from agentdebug.rerun.score import LLMJudgeScorer
from agentdebug.schema import AgentTrajectory, OutcomeStatus
from conftest import EXAMPLES, run_cli
from toy_agent import failing_run

BOOKING = EXAMPLES / "failed_booking.json"
BLAME = {
    "agent": "searcher",
    "step": 3,
    "failure_mode": "action.malformed_tool_call",
    "reason": "The searcher passed the date as 14/12/2026; the tool wants YYYY-MM-DD.",
    "evidence": [{"step": 3, "text": "14/12/2026"}],
    "fix": "Call search_fares with date 2026-12-14.",
    "confidence": 0.8,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_script_and_a_log_through_the_command_line(tmp_path: Path) -> None:
    script, log = tmp_path / "script.json", tmp_path / "requests.jsonl"
    script.write_text(json.dumps({"Attribution": BLAME}))
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentdebug", "scripted-server", "--port", str(port),
         "--script", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        assert f"127.0.0.1:{port}" in server.stdout.readline()
        model = ["--model", "scripted", "--base-url", f"http://127.0.0.1:{port}/v1"]
        said = run_cli(
            "diagnose", str(BOOKING), "--attributor", "all-at-once", "--no-store",
            "--format", "json", *model, "--api-key", "none", "--no-cache",
        )  # fmt: skip
        assert said.returncode == 0, said.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
    report = json.loads(said.stdout)
    root = report["hypotheses"][0]
    assert (root["agent_name"], root["step_index"]) == ("searcher", 3)
    assert report["fix"]["directive"].endswith("Call search_fares with date 2026-12-14.")
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["schema"] == "Attribution" and line["status"] == 200
    assert json.loads(line["answer"]) == BLAME
    prompt = "\n".join(str(m["content"]) for m in line["messages"])
    assert "14/12/2026" in prompt  # (the prompt agentdebug sent: the trace it read)


def test_a_bad_script_is_refused_naming_the_file_and_the_entry(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"Attribution": [BLAME, {"$status": 99}]}))
    said = run_cli("scripted-server", "--port", str(_free_port()), "--script", str(script))
    assert said.returncode == 2
    assert f"{script}: entry 'Attribution'[1]: $status must be an HTTP status" in (
        " ".join(said.stderr.split())
    )
    cases: list[tuple[Any, str]] = [
        ("not json", "not a JSON script"),
        ([], "the list is an empty list"),
        ({"StepVerdict": "yes"}, "entry 'StepVerdict' is str, not a JSON object"),
        ({"*": {"$status": 500, "verdict": "x"}}, "a reply takes only"),
        ({"*": {"$delay": 1}}, "a reply with no $status gives $content"),
        ({"Atribution": BLAME}, "'Atribution' is not an answer agentdebug asks for (did you"),
        ({"Attribution": BLAME, "Judge": {}}, "the names: Attribution, CriticAnswer"),
    ]
    for doc, expected in cases:
        script.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        with pytest.raises(ScriptError) as raised:
            load_script(script)
        assert str(raised.value).startswith(f"{script}: ") and expected in str(raised.value)


def test_answers_by_name_in_turn_errors_and_the_minimal_instance_otherwise(
    tmp_path: Path,
) -> None:
    """A list under a name is given in turn (the last again); a name the script does
    not hold gets "*", else a minimal instance; a reply may be an HTTP error, which
    the client meets as from a real server (here, falling back to the free tier)."""
    script, log = tmp_path / "script.json", tmp_path / "log.jsonl"
    script.write_text(json.dumps({"Attribution": [{"$status": 500, "$message": "down"}]}))
    run = AgentTrajectory.model_validate_json(BOOKING.read_text())
    with ScriptedServer(logged(load_script(script), log)) as server:
        settings = LLMSettings(
            model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0
        )
        report = diagnose(run, attributor="all-at-once", settings=settings)
    assert any("'all-at-once' failed" in n and "HTTP 500: down" in n for n in report.notes)
    assert [json.loads(x)["status"] for x in log.read_text().splitlines()] == [500]
    turns = load_script(_write(tmp_path, {"StepVerdict": [{"n": 1}, {"n": 2}], "*": {"any": 1}}))
    asked = [turns(_asking(name)) for name in ("StepVerdict",) * 3 + ("HalfVerdict",)]
    assert [json.loads(str(getattr(r, "content", r))) for r in asked] == [
        {"n": 1},
        {"n": 2},
        {"n": 2},
        {"any": 1},
    ]
    plain = load_script(_write(tmp_path, {"StepVerdict": {"n": 1}}))
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    minimal = plain(_asking("HalfVerdict", schema))
    assert json.loads(str(getattr(minimal, "content", minimal))) == {"ok": False}


def test_the_names_a_script_may_use_are_those_agentdebug_asks_for(tmp_path: Path) -> None:
    """A review: a misspelt name ("Atribution") was silently never given, and the
    dry run then looked like a broken model path. Every model-backed stage, driven
    through a server, asks only for names :data:`ASKED` holds, and each name it
    holds is one the code defines (so the list cannot keep a name gone stale)."""
    log = tmp_path / "log.jsonl"
    booking = AgentTrajectory.model_validate_json(BOOKING.read_text())
    dbg = AgentDebug(tmp_path / "store")
    toy = failing_run(dbg)
    report = dbg.diagnose(toy)
    with ScriptedServer(logged(schema_answerer, log)) as server:
        settings = LLMSettings(
            model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0
        )
        for strategy in ("all-at-once", "step-by-step", "binary-search", "lifecycle",
                         "deepdebug", "auto"):  # fmt: skip
            diagnose(booking, attributor=strategy, settings=settings, judge=True)
        with use_settings(settings):
            LLMJudgeScorer().score(toy, toy)
            for recoverer in (ReflexionRecoverer(), CriticRecoverer(), AutoManualRecoverer()):
                recoverer.recover(toy, report)
    asked = {json.loads(line)["schema"] for line in log.read_text().splitlines()}
    assert asked <= ASKED and len(asked) >= 10, sorted(asked)
    source = "\n".join(
        path.read_text() for path in (EXAMPLES.parent / "packages").rglob("agentdebug/**/*.py")
    )
    for name in ASKED:
        assert f"class {name}(" in source or f'"{name}"' in source.replace(f'"{name}",  #', ""), (
            name
        )


def test_a_script_with_a_bom_and_a_retry_after(tmp_path: Path) -> None:
    """A review: a UTF-8 BOM (as editors write one) was refused, and a 429's
    Retry-After could not be scripted."""
    script = tmp_path / "bom.json"
    doc = {"*": {"$status": 429, "$message": "slow down", "$retry_after": 30}}
    script.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    reply = load_script(script)(_asking("Attribution"))
    assert getattr(reply, "status", None) == 429
    assert getattr(reply, "headers", {}) == {"Retry-After": "30"}


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(doc))
    return path


def _asking(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": "?"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema or {"type": "object"}},
        },
    }


def test_diagnose_says_it_waits_on_a_slow_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: against a hung endpoint `agentdebug diagnose` said nothing for five
    minutes. After a few seconds it says what it waits for and how long it may."""
    from agentdebug.cli import app
    from agentdebug.cli.app import cli
    from click.testing import CliRunner

    monkeypatch.setattr(app, "WAIT_NOTICE", 0.2)
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"*": {"$status": 200, "$content": "{}", "$delay": 3}}))
    with ScriptedServer(load_script(script)) as server:
        url = server.base_url
        result = CliRunner().invoke(
            cli,
            ["--store", str(tmp_path / "store"), "diagnose", str(BOOKING), "--no-store",
             "--attributor", "all-at-once", "--model", "scripted", "--base-url",
             url, "--api-key", "k", "--timeout", "1", "--no-cache"],
            env={"AGENTDEBUG_MAX_RETRIES": "0"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        f"Waiting for model 'scripted' at {url} to diagnose run "
        "example-failed-booking: up to 1 s a call, 1 attempt(s) each"
    ) in result.output  # (stdout and stderr: click before 8.2 has no stderr apart)


def test_a_succeeded_run_is_not_said_to_leave_the_model_unused(tmp_path: Path) -> None:
    """A review: with a model configured, `diagnose` of a run that succeeded cleanly
    said "a model is configured but this attributor does not use it (try
    --attributor auto)", though auto was the attributor and there was nothing to
    look for. It now says only that."""
    run = AgentTrajectory.model_validate_json(BOOKING.read_text())
    clean = run.model_copy(
        update={
            "id": "clean",
            "events": [run.events[0], run.events[-1].model_copy(update={"step_index": 1})],
            "outcome": run.outcome.model_copy(
                update={"status": OutcomeStatus.SUCCESS, "reason": None}
            ),
        }
    )
    path = tmp_path / "clean.json"
    path.write_text(clean.model_dump_json())
    with ScriptedServer(schema_answerer) as server:
        said = run_cli("--store", str(tmp_path / "store"), "diagnose", str(path), "--model",
                       "scripted", "--base-url", server.base_url, "--api-key", "k")  # fmt: skip
        asked = len(server.requests)
    assert said.returncode == 0, said.stderr
    assert said.stdout.count("the run succeeded and no detector found a fault") == 1  # (once)
    assert "free tier" not in said.stdout and "does not use it" not in said.stdout
    assert asked == 0
