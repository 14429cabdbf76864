"""The `agentdebug` command, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from conftest import DATA, EXAMPLES, run_cli
from toy_agent import failing_run

EXAMPLE = str(EXAMPLES / "failed_booking.json")


def one_line_error(result: object) -> str:
    """The error a user sees: one line on stderr, no traceback, a non-zero exit."""
    assert result.returncode == 1, (result.stdout, result.stderr)  # type: ignore[attr-defined]
    err = result.stderr.strip()  # type: ignore[attr-defined]
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


def test_diagnose_the_shipped_example(home: Path) -> None:
    result = run_cli("diagnose", EXAMPLE)
    assert result.returncode == 0, result.stderr
    assert "Root cause: searcher at step 3" in result.stdout
    assert "→ [  3] searcher" in result.stdout
    assert "as run example-failed-booking, with this diagnosis" in result.stderr  # said
    # The run and its report were kept: the run can be listed, shown and re-diagnosed by id.
    listed = run_cli("list")
    assert "example-failed-booking" in listed.stdout
    assert "searcher@3" in listed.stdout
    shown = run_cli("show", "example-failed")
    assert shown.returncode == 0
    assert "diagnosis: The failure shows at step 13" in shown.stdout
    assert shown.stdout.count("[ ") >= 14


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_diagnose_formats(fmt: str) -> None:
    result = run_cli("diagnose", EXAMPLE, "--format", fmt, "--no-store")
    assert result.returncode == 0, result.stderr
    if fmt == "json":
        assert json.loads(result.stdout)["hypotheses"][0]["agent_name"] == "searcher"
    else:
        assert result.stdout.startswith("# Diagnosis of run `example-failed-booking`")
    assert "example-failed-booking" not in run_cli("list").stdout  # --no-store kept nothing


def test_diagnose_jsonl_gives_one_report_a_line_for_one_run_or_several(tmp_path: Path) -> None:
    """--format json is an object for one run and an array for several; jsonl is the
    same shape for any number, for scripts."""
    run = json.loads(Path(EXAMPLE).read_text())
    several = tmp_path / "two.jsonl"
    several.write_text("".join(json.dumps({**run, "id": f"run-{k}"}) + "\n" for k in "ab"))
    for target, ids in ((EXAMPLE, ["example-failed-booking"]), (several, ["run-a", "run-b"])):
        result = run_cli("diagnose", str(target), "--format", "jsonl", "--no-store")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        reports = [json.loads(line) for line in lines]
        assert [r["trajectory_id"] for r in reports] == ids
        assert all(r["hypotheses"][0]["agent_name"] == "searcher" for r in reports)


def test_ingest_goes_on_past_bad_files_and_exits_non_zero(tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a_good.json").write_text(Path(EXAMPLE).read_text())
    (folder / "b_truncated.json").write_text('{"id": "x", "events": [{"id": "e0", "ty')
    (folder / "c_binary.json").write_bytes(b'{"id": "\xff\xfe"}')
    (folder / "d_unknown.json").write_text('{"hello": "world"}')
    (folder / "e_badfield.json").write_text(
        json.dumps({"id": "r", "events": [{"id": "e0", "type": "plan", "step_index": "abc"}]})
    )
    (folder / "f_notes.txt").write_text("ignored: not json")
    result = run_cli("ingest", str(folder))
    assert result.returncode == 1
    assert "imported 1 run(s) from 1 file(s)" in result.stdout
    assert "4 file(s) failed" in result.stderr
    err = result.stderr
    assert "b_truncated.json" in err
    assert "c_binary.json" in err and "UTF-8" in err
    assert "d_unknown.json" in err and "tried" in err
    assert "e_badfield.json" in err and "step_index" in err and "record" in err
    assert "Traceback" not in err
    # an importer no one has: the command's mistake, said once, before any file is read
    bogus = run_cli("ingest", str(folder), "--format", "bogus")
    assert bogus.returncode == 2
    assert "Invalid value for --format: unknown import format 'bogus' (known: " in bogus.stderr
    # The good run is intact, the database is sound.
    db = sqlite3.connect(home / "agentdebug.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    shown = run_cli("show", "example-failed-booking")
    assert shown.returncode == 0 and "final_answer" in shown.stdout


def test_list_filters(home: Path) -> None:
    assert run_cli("diagnose", EXAMPLE).returncode == 0
    assert "example-failed-booking" in run_cli("list", "--status", "failure").stdout
    assert "example-failed-booking" not in run_cli("list", "--status", "success").stdout
    assert "example-failed-booking" in run_cli("list", "--framework", "hand-written").stdout
    assert "example-failed-booking" in run_cli("list", "--agent", "booker").stdout
    assert "example-failed-booking" in run_cli("list", "--mode", "action.repeated_action").stdout
    assert "example-failed-booking" not in run_cli("list", "--mode", "system.auth_error").stdout
    # a mode no taxonomy has is said to be unknown, not answered with "no runs match"
    assert one_line_error(run_cli("list", "--mode", "repeated_action")) == (
        "error: field '--mode': unknown failure mode 'repeated_action'; did you mean "
        "action.repeated_action? (`agentdebug taxonomy` lists them)"
    )
    # ...unless runs have it: a mode a plugin of another environment found
    from agentdebug import AgentDebug

    store = AgentDebug(home).store
    assert store is not None
    report = store.load_reports("example-failed-booking")[-1]
    plugin_found = report.findings[0].model_copy(update={"mode_id": "acme.pii_exposed"})
    store.save_report(report.model_copy(update={"id": "r-plugin", "findings": [plugin_found]}))
    assert "example-failed-booking" in run_cli("list", "--mode", "acme.pii_exposed").stdout
    lines = run_cli("list", "--json").stdout.splitlines()
    assert json.loads(lines[0])["root_step"] == 3
    assert one_line_error(run_cli("list", "--since", "last tuesday")).startswith(
        "error: field '--since'"
    )


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    # no store where one is looked for: said so, and none is made there
    for where in ([], ["--store", str(tmp_path / "typo")]):
        for command in (["show", "no-such-run"], ["list"], ["diff", "a", "b"]):
            err = one_line_error(run_cli(*where, *command))
            assert err.startswith("error: ") and "agentdebug.db: no agentdebug store here" in err
    assert not (tmp_path / "typo").exists()
    # a file given as the store (a run file, say)
    run_file = tmp_path / "run.json"
    run_file.write_text("{}")
    assert one_line_error(run_cli("--store", str(run_file), "list")) == (
        f"error: {run_file}: is a file, not a store folder: import it with `agentdebug "
        f"ingest {run_file}` or diagnose it with `agentdebug diagnose {run_file}`; --store "
        "takes a folder (SQLite inside), a .db, .sqlite or .sqlite3 file, or a .jsonl store "
        "(a new file, or one agentdebug wrote)"
    )
    assert run_cli("ingest", EXAMPLE).returncode == 0
    assert one_line_error(run_cli("show", "no-such-run")).startswith(
        "error: no run with id 'no-such-run' in "
    )
    assert "Invalid value for '--limit'" in run_cli("list", "--limit", "0").stderr
    assert "no such file" in one_line_error(run_cli("diagnose", "missing/run.json"))
    assert "unknown attributor 'oracle'" in one_line_error(
        run_cli("diagnose", EXAMPLE, "--attributor", "oracle")
    )


def test_an_empty_run_file_is_refused_clearly(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"id": "nothing", "events": []}))
    err = one_line_error(run_cli("diagnose", str(empty)))
    assert "empty.json" in err and "no events" in err


def test_schema_prints_the_json_schema() -> None:
    result = run_cli("schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "AgentTrajectory"
    event_types = schema["$defs"]["EventType"]["enum"]
    for needed in (
        "llm.call",
        "llm.response",
        "tool.call",
        "tool.result",
        "reasoning",
        "plan",
        "memory.read",
        "memory.write",
        "handoff",
        "message",
        "ui.action",
        "observation",
        "final_answer",
        "error",
        "checkpoint",
    ):
        assert needed in event_types
    assert json.loads(run_cli("schema", "--what", "report").stdout)["title"] == "DiagnosticReport"


def test_taxonomy_lists_modes_and_crosswalks() -> None:
    listed = run_cli("taxonomy").stdout
    assert "verification.premature_success" in listed
    mast = run_cli("taxonomy", "--crosswalk", "mast").stdout.splitlines()
    assert len(mast) == 14 and all("(none)" not in line for line in mast)


@pytest.mark.skipif(not (DATA / "whowhen").is_dir(), reason="../shared/data not present")
def test_ingest_a_benchmark_folder_and_diagnose_a_run(home: Path) -> None:
    result = run_cli("ingest", str(DATA / "whowhen" / "Hand-Crafted"))
    assert result.returncode == 0, result.stderr
    assert "imported 29 run(s)" in result.stdout
    header, *listed = run_cli(
        "list", "--framework", "magentic-one", "--limit", "100"
    ).stdout.splitlines()
    assert header.split()[:3] == ["RUN", "STATUS", "FRAMEWORK"] and "ROOT CAUSE" in header
    assert len(listed) == 29
    run_id = listed[0].split()[0]
    diag = run_cli("diagnose", run_id)
    assert diag.returncode == 0
    assert "Root cause:" in diag.stdout


def test_config_set_show_unset(tmp_path: Path) -> None:
    env = {
        "AGENTDEBUG_CONFIG": str(tmp_path / "config.toml"),
        "AGENTDEBUG_MODEL": "",
        "OPENAI_MODEL": "",
    }
    assert run_cli("config", "set", "model", "llama3.1", env=env).returncode == 0
    assert run_cli("config", "set", "api_key", "sk-secret-value-1234", env=env).returncode == 0
    shown = run_cli("config", "show", env=env)
    assert "llama3.1" in shown.stdout
    assert "sk-secret-value-1234" not in shown.stdout and "1234" in shown.stdout
    flag = run_cli("config", "show", "--model", "other", env=env)
    assert "other" in flag.stdout and "llama3.1" not in flag.stdout
    assert "unknown setting 'colour'" in one_line_error(
        run_cli("config", "set", "colour", "blue", env=env)
    )
    assert "timeout" in one_line_error(run_cli("config", "set", "timeout", "soon", env=env))
    removed = run_cli("config", "unset", "model", env=env)
    assert removed.returncode == 0 and removed.stdout.startswith("model removed from ")
    assert "llama3.1" not in run_cli("config", "show", env=env).stdout
    again = run_cli("config", "unset", "model", env=env)  # (nothing to remove: said so)
    assert again.returncode == 0 and again.stdout.startswith("model was not set in ")


def test_show_says_which_run_a_run_continues(home: Path) -> None:
    """``metadata["continues"]``: a run picked up where another stopped (a retry
    on the same thread) is shown with the run it continues."""
    from agentdebug import AgentDebug

    dbg = AgentDebug(home)
    with dbg.trace("charge the card", framework="toy") as first:
        first.record("agent.start", agent_name="charge", step_index=1)
    with dbg.trace("charge the card", framework="toy", metadata={"continues": first.id}) as again:
        again.record("agent.start", agent_name="charge", step_index=1)
    dbg.close()
    shown = run_cli("show", again.id, env={"AGENTDEBUG_HOME": str(home)})
    assert shown.returncode == 0, shown.stderr
    assert f"continues: {first.id} (picked up where that run stopped)" in shown.stdout
    shown = run_cli("show", first.id, env={"AGENTDEBUG_HOME": str(home)})
    assert "continues:" not in shown.stdout


def test_diagnosing_a_run_still_in_flight_names_no_cause_and_stores_nothing(home: Path) -> None:
    """A service's run is still going (or its process died): a diagnosis of what it
    recorded so far finds no fault and says so, and no report is stored (before, the
    first decision was blamed, and that blame stayed on the run once it succeeded)."""
    dbg = AgentDebug(home)
    session = dbg.trace("still going")
    session.__enter__()
    session.record(EventType.USER_INPUT, agent_name="user", input="plan a trip")
    session.record(EventType.LLM_RESPONSE, agent_name="plan", output="Step 1: look up flights")
    dbg.flush()
    run_id = session.trajectory().id
    done = run_cli("diagnose", run_id)
    assert done.returncode == 0, done.stderr
    assert "has not ended (still running, or its process died where" in done.stderr
    assert "Root cause:" not in done.stdout or "Root cause: none" in done.stdout
    assert "no root cause to look for yet" in done.stdout
    assert dbg.store is not None and dbg.store.load_reports(run_id) == []
    session.__exit__(None, None, None)
    dbg.close()


def test_list_cuts_a_long_goal_with_an_ellipsis(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="x" * 200) as t:
        t.record(EventType.MESSAGE, agent_name="a", output="hi")
    dbg.close()
    (line,) = [line for line in run_cli("list").stdout.splitlines() if line.startswith(t.id)]
    assert line.endswith("x" * 79 + "…")


def test_diagnose_takes_a_stored_runs_id_over_a_folder_of_that_name(
    home: Path, tmp_path: Path
) -> None:
    """A review: a folder named as a stored run (its artifacts) in the working
    directory made `diagnose RUN_ID` fail with "is a directory, not a file"."""
    dbg = AgentDebug(home)
    run = failing_run(dbg)
    dbg.close()
    (tmp_path / run.id).mkdir()
    said = run_cli("diagnose", run.id, cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert f"Diagnosis of run {run.id}" in said.stdout
    said = run_cli("diagnose", f"./{run.id}", cwd=tmp_path)  # (written as a path: the folder)
    assert said.returncode != 0 and "directory" in said.stderr
    (tmp_path / run.id[:6]).mkdir()  # (a second review: a folder named as a prefix of an id)
    said = run_cli("diagnose", run.id[:6], cwd=tmp_path)
    assert said.returncode != 0 and "directory" in said.stderr
