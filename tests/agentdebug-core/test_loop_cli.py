"""The closed loop from the command line: `agentdebug act` plans, reruns behind
the gate, keeps branches in the store it was given, and says so when there is
nothing to act on."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentdebug import AgentDebug
from agentdebug.llm.testing import ScriptedServer
from agentdebug.schema import OutcomeStatus
from conftest import run_cli
from toy_agent import failing_run

HERE = Path(__file__).resolve().parent


def _stored_failure(home: Path) -> str:
    dbg = AgentDebug(home)
    run = failing_run(dbg)
    dbg.close()
    return run.id


def test_cli_act_suggests_then_reruns_behind_the_gate(home: Path) -> None:
    run_id = _stored_failure(home)
    env = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}

    plan = run_cli("act", run_id, env=env)
    assert plan.returncode == 0, plan.stderr
    assert "Plan (native): rerun from step 1 (researcher)" in plan.stdout
    assert "Suggest-only" in plan.stdout

    refused = run_cli("act", run_id, "--rerun", "--executor", "toy_agent:make_executor", env=env)
    assert refused.returncode == 2
    assert "needs a terminal" in refused.stdout

    done = run_cli(
        "act",
        run_id,
        "--rerun",
        "--executor",
        "toy_agent:make_executor",
        "--policy",
        "auto",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Loop succeeded" in done.stdout and "Root cause: verified by rerun" in done.stdout
    assert "First divergence: A step 1 / B step 1." in done.stdout

    shown = run_cli("show", run_id)
    assert "Root cause verified by rerun" in shown.stdout
    assert "  rerun:     branch " in shown.stdout and "(success)" in shown.stdout

    # diagnosed again later (same root cause): the new report keeps what the rerun said
    again = run_cli("diagnose", run_id, "--format", "json")
    assert again.returncode == 0, again.stderr
    redone = json.loads(again.stdout)
    assert redone["verified_by_rerun"] is True
    assert redone["verification"]["status"] == "verified_by_rerun"
    assert any("carried over" in note for note in redone["notes"])
    assert "Root cause verified by rerun" in run_cli("show", run_id).stdout

    listed = run_cli("list", "--json")
    runs = [json.loads(line) for line in listed.stdout.splitlines()]
    branch = next(r for r in runs if r["id"] != run_id)
    assert branch["parent_id"] == run_id and branch["status"] == "success"
    assert f"[branch of {run_id}]" in run_cli("list").stdout
    only = run_cli("list", "--branches-of", run_id[:8], "--json").stdout.splitlines()
    assert [json.loads(line)["id"] for line in only] == [branch["id"]]
    diff = run_cli("diff", run_id, branch["id"], "--format", "json")
    doc = json.loads(diff.stdout)
    assert doc["related"] == f"{branch['id']} is a branch of {run_id}"
    assert doc["first_divergence"]["a_step"] == 1

    # the branch passes: nothing to plan, and its diagnosis blames no one
    passing = run_cli("act", branch["id"])
    assert passing.returncode == 0, passing.stderr
    assert "already passes" in passing.stdout and "Nothing to act on" in passing.stdout
    assert "Directive" not in passing.stdout and "Plan" not in passing.stdout
    told = json.loads(run_cli("diagnose", branch["id"], "--format", "json").stdout)
    assert told["hypotheses"] == [] and told["fix"] is None
    assert told["summary"].startswith("The run succeeded")


def test_cli_act_keeps_the_branch_in_the_store_it_was_given(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-store"
    run_id = _stored_failure(other)
    done = run_cli(
        "--store",
        str(other),
        "act",
        run_id,
        "--rerun",
        "--policy",
        "auto",
        "--executor",
        "toy_agent:make_executor",
        env={"PYTHONPATH": str(HERE)},
    )
    assert done.returncode == 0, done.stderr
    branches = [r for r in AgentDebug(other).store.list_runs() if r.parent_id == run_id]  # type: ignore[union-attr]
    assert len(branches) == 1
    assert not (home / "agentdebug.db").exists()  # nothing went to $AGENTDEBUG_HOME


def test_cli_act_on_a_run_that_already_passes_stores_no_diagnosis(home: Path) -> None:
    """Nothing to repair: the loop says so, and the run gets no report blaming a step."""
    dbg = AgentDebug(home)
    with dbg.trace("Name the capital of Australia.", framework="toy") as t:
        t.record("final_answer", agent_name="researcher", output="Canberra")
        t.set_outcome(OutcomeStatus.SUCCESS, final_answer="Canberra", reason="checked")
    dbg.close()
    done = run_cli(
        "act",
        t.id,
        "--rerun",
        "--executor",
        "toy_agent:make_executor",
        "--policy",
        "auto",
        env={"PYTHONPATH": str(HERE)},
    )
    assert done.returncode == 0, done.stderr
    assert "Loop already_ok: checked" in done.stdout
    assert AgentDebug(home).store.load_reports(t.id) == []  # type: ignore[union-attr]


def test_cli_act_on_a_passing_run_of_a_framework_with_no_executor_is_already_ok(
    home: Path,
) -> None:
    """No executor installed for its framework: a run that passes needs none (before,
    the command failed saying which to install); one that fails still says so."""
    dbg = AgentDebug(home)
    with dbg.trace("Name the capital of Australia.", framework="hand-written") as t:
        t.record("final_answer", agent_name="researcher", output="Canberra")
        t.set_outcome(OutcomeStatus.SUCCESS, final_answer="Canberra", reason="checked")
    with dbg.trace("Name the capital of Australia.", framework="hand-written") as bad:
        t2 = bad
        bad.record("final_answer", agent_name="researcher", output="Sydney")
        bad.set_outcome(OutcomeStatus.FAILURE, final_answer="Sydney", reason="wrong city")
    dbg.close()
    done = run_cli("act", t.id, "--rerun", "--policy", "auto")
    assert done.returncode == 0, done.stderr
    assert "Loop already_ok: checked" in done.stdout
    failed = run_cli("act", t2.id, "--rerun", "--policy", "auto")
    assert failed.returncode == 1
    assert "no rerun executor for framework 'hand-written'" in failed.stderr


def test_cli_act_plans_for_a_run_no_scorer_can_judge(home: Path) -> None:
    """A run with no verdict and no reference answer: the scorer cannot say it
    passes, so the plan is made (only the rerun needs a verdict)."""
    dbg = AgentDebug(home)
    with dbg.trace("Name the capital of Australia.", framework="toy") as t:
        t.record("tool.call", agent_name="researcher", step_index=1, input={"q": "largest city"})
        t.record("tool.result", agent_name="search", step_index=2, error="search: no such tool")
        t.set_outcome(OutcomeStatus.UNKNOWN, reason="the process stopped")
    dbg.close()
    plan = run_cli("act", t.id)
    assert plan.returncode == 0, plan.stderr
    assert "Plan (native): rerun from step" in plan.stdout and "already passes" not in plan.stdout


def test_cli_act_failing_loop_and_bad_executor(home: Path) -> None:
    run_id = _stored_failure(home)
    env = {"PYTHONPATH": str(HERE)}
    failed = run_cli(
        "act",
        run_id,
        "--rerun",
        "--executor",
        "toy_agent:make_stubborn_executor",
        "--policy",
        "auto",
        "--max-rounds",
        "2",
        "--format",
        "json",
        env=env,
    )
    assert failed.returncode == 2
    doc = json.loads(failed.stdout)
    assert doc["status"] == "failed" and len(doc["attempts"]) == 2
    shown = run_cli("show", run_id).stdout  # which scorer said no, and why
    assert "Root cause not confirmed by rerun: branch " in shown
    assert "did not succeed (outcome scorer: " in shown
    bad = run_cli("act", run_id, "--rerun", "--executor", "nowhere:thing", env=env)
    assert bad.returncode == 1 and bad.stderr.startswith("error: executor 'nowhere:thing'")
    missing = run_cli("act", run_id, "--rerun", "--policy", "auto", env=env)
    assert missing.returncode == 1 and "no rerun executor for framework 'toy'" in missing.stderr


def test_cli_act_with_a_model_recoverer_through_the_server(home: Path) -> None:
    run_id = _stored_failure(home)
    answer = {
        "reflection": "You searched for the largest city instead of the capital.",
        "directive": "Search city_search for the capital of Australia.",
    }
    with ScriptedServer(lambda request: json.dumps(answer)) as server:
        env = {"PYTHONPATH": str(HERE)}
        model = ["--model", "scripted", "--base-url", server.base_url, "--api-key", "k"]
        model += ["--attributor", "heuristic"]  # only the recoverer asks the model
        plan = run_cli("act", run_id, "--recover", "reflexion", "--format", "json", *model, env=env)
        assert plan.returncode == 0, plan.stderr
        doc = json.loads(plan.stdout)
        assert doc["strategy"] == "reflexion" and doc["resume_step"] == 1
        assert doc["directive"].endswith("Search city_search for the capital of Australia.")
        assert doc["cost"]["calls"] == 1
        said = run_cli("act", run_id, "--recover", "reflexion", *model, env=env)
        assert (  # the command it suggests makes the same plan (the key not printed)
            f"To rerun: agentdebug act {run_id} --recover reflexion --rerun --model scripted "
            f"--base-url {server.base_url} --api-key ...\n"
        ) in said.stdout
        done = run_cli(
            "act",
            run_id,
            "--recover",
            "reflexion",
            "--rerun",
            "--policy",
            "auto",
            "--executor",
            "toy_agent:make_executor",
            *model,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "Loop succeeded" in done.stdout
        # the same question again is answered from the response cache
        assert len(server.requests) == 1
    reports = AgentDebug(home).store.load_reports(run_id)  # type: ignore[union-attr]
    kept = [a for r in reports for a in r.metadata.get("recovery", [])]
    assert [a["plan"]["strategy"] for a in kept] == ["reflexion"] * 3
    assert [a["plan"]["cost"]["calls"] for a in kept] == [1, 0, 0]
    assert kept[2]["plan"]["cost"]["cached_calls"] == 1


def test_cli_act_diagnoses_again_when_the_latest_diagnosis_names_no_root_cause(
    home: Path,
) -> None:
    """A diagnosis tried since (an attributor that gave no answer) is stored as the
    latest: act makes a fresh one rather than refuse for want of a step."""
    run_id = _stored_failure(home)
    assert run_cli("act", run_id).returncode == 0  # diagnosed and stored
    store = AgentDebug(home).store
    assert store is not None
    latest = store.load_reports(run_id)[-1]
    store.save_report(latest.model_copy(update={"id": "r-none", "hypotheses": [], "fix": None}))
    plan = run_cli("act", run_id)
    assert plan.returncode == 0, plan.stderr
    assert "Note: the run's latest diagnosis (r-none) names no root cause; diagnosing it again" in (
        plan.stdout
    )
    assert "Plan (native): rerun from step 1 (researcher)" in plan.stdout


def test_cli_diagnose_uses_the_configured_model_as_act_does(home: Path) -> None:
    """`agentdebug diagnose RUN`, which a failed run's note suggests, chooses its
    strategy as `act` and the automatic diagnosis do: the router when a model is
    configured (a review: it ran the free tier, replacing the model's diagnosis
    that a rerun had verified, and `act` then planned from the free tier's blame);
    the free tier when none is, or when asked for."""
    from test_model_prompts import minimal

    run_id = _stored_failure(home)
    with ScriptedServer(minimal) as server:
        env = {
            "AGENTDEBUG_MODEL": "scripted",
            "AGENTDEBUG_BASE_URL": server.base_url,
            "AGENTDEBUG_API_KEY": "k",
            "AGENTDEBUG_MAX_RETRIES": "0",
        }
        said = run_cli("diagnose", run_id, "--format", "json", env=env)
        assert said.returncode == 0, said.stderr
        assert server.requests, "the configured model was not asked"
        asked = len(server.requests)
        free = run_cli("diagnose", run_id, "--attributor", "heuristic", env=env)
        assert free.returncode == 0, free.stderr
        assert len(server.requests) == asked  # (asked for the free tier: no model call)
    report = json.loads(said.stdout)
    assert report["cost"]["calls"] >= 1
    unset = {"AGENTDEBUG_MODEL": "", "AGENTDEBUG_BASE_URL": "", "OPENAI_MODEL": ""}
    plain = run_cli("diagnose", run_id, "--format", "json", env=unset)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["cost"]["calls"] == 0


def test_cli_diagnose_keeps_a_verified_diagnosis_over_another_blame(home: Path) -> None:
    """A review: with the model down, `agentdebug diagnose RUN` fell back to the free
    tier and stored its blame over the model's, which a rerun had verified; `act`
    then planned from the free tier's. Another blame than the verified one is shown,
    not stored, saying why; the same blame is stored, the verification carried."""
    from agentdebug.schema import Verification

    run_id = _stored_failure(home)
    dbg = AgentDebug(home)
    run = dbg.store.load_trajectory(run_id)
    report = dbg.diagnose(run)
    root = report.root_cause
    assert root is not None
    other = next(e for e in run.events if e.step_index != root.step_index and e.agent_name)
    moved = root.model_copy(update={"step_index": other.step_index, "event_id": other.id})
    verified = report.model_copy(
        update={
            "id": "rverified",
            "hypotheses": [moved],
            "verified_by_rerun": True,
            "verification": Verification(status="verified_by_rerun", branch_id="b1"),
        }
    )
    dbg.store.save_report(verified)
    dbg.close()
    said = run_cli("diagnose", run_id, "--attributor", "heuristic")
    assert said.returncode == 0, said.stderr
    assert f"Note: not stored: run {run_id}'s diagnosis rverified, which a rerun verified" in (
        " ".join(said.stderr.split())
    )
    latest = AgentDebug(home).store.load_reports(run_id)[-1]
    assert latest.id == "rverified"


def test_a_model_recoverer_whose_model_fails_says_the_native_one_needs_none(home: Path) -> None:
    """The recoverer's model failing ends the loop (before, with the HTTP error alone,
    nothing said of the recoverer that needs no model)."""
    from agentdebug.llm.testing import Reply

    run_id = _stored_failure(home)
    with ScriptedServer([Reply("boom", status=500)] * 10) as server:
        env = {"PYTHONPATH": str(HERE), "AGENTDEBUG_MAX_RETRIES": "0"}
        model = ["--model", "scripted", "--base-url", server.base_url, "--api-key", "k"]
        model += ["--attributor", "heuristic"]
        done = run_cli(
            "act", run_id, "--recover", "reflexion", "--rerun", "--policy", "auto",
            "--executor", "toy_agent:make_executor", *model, env=env,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    said = done.stdout + done.stderr
    assert "recoverer 'reflexion': " in said and "HTTP 500" in said
    assert "the 'native' recoverer needs no model" in said


def test_cli_act_on_a_run_still_running_says_so(home: Path) -> None:
    """A run that has not ended (a LangGraph run waiting at an interrupt for a
    person's answer): nothing to act on yet, said as such (before: "no fix to use
    as a directive ... try --recover reflexion or critic with a model configured")."""
    dbg = AgentDebug(home)
    session = dbg.trace("Refund order B2.", framework="toy")
    session.record("tool_call", agent_name="agent", input={"order": "B2"})
    session.flush()
    try:
        said = run_cli("act", session.id)
        assert said.returncode == 1
        assert f"run {session.id} is still running" in said.stderr
        assert "reflexion" not in said.stderr + said.stdout
    finally:
        session.close()
        dbg.close()
