"""`agentdebug act --rerun` on a stored LangGraph run, in a process of its own as a
user runs it: the installed executor rebuilds the graph from the recorded factory,
takes `--executor-option`s, and refuses a rerun that cannot run before the gate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.plugins import get_registry
from agentdebug.rerun import configure_executor, find_executor
from agentdebug.schema import AgentTrajectory, DiagnosticReport, Fix, Hypothesis
from agentdebug.store.history import history_runs
from agentdebug_langgraph import AgentDebugCallback
from langgraph.types import Command
from lg_graphs import approved_refund_from_env, order_found, refunded_24, unsaved_agent

HERE = Path(__file__).resolve().parent


def cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    """The real `agentdebug` command, importing the graphs from this folder."""
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "agentdebug", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "LG_TEST_DB": str(db)},
        timeout=300,
        check=False,
    )


def rerun(run_id: str, *options: str, db: Path) -> subprocess.CompletedProcess[str]:
    """`act RUN --rerun --policy auto`, each of ``options`` an --executor-option."""
    given = [arg for option in options for arg in ("--executor-option", option)]
    return cli("act", run_id, "--rerun", "--policy", "auto", *given, db=db)


def blame_prepare(dbg: AgentDebug, run: AgentTrajectory) -> None:
    """A stored diagnosis blaming ``prepare`` (what a configured model finds here)."""
    store = dbg.store
    assert store is not None
    step = next(e.step_index for e in run.events if e.agent_name == "prepare")
    store.save_report(
        DiagnosticReport(
            id=f"r-{run.id}",
            trajectory_id=run.id,
            hypotheses=[
                Hypothesis(agent_name="prepare", step_index=step, strategy="t", confidence=0.9)
            ],
            fix=Fix(directive="use the policy's amount", target_agent="prepare", target_step=step),
            metadata={"history": history_runs(dbg.history(run))},
        )
    )


def approved_run(
    dbg: AgentDebug,
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
    check: Any = refunded_24,
    **configurable: Any,
) -> str:
    """The refund run, its human's "yes" given to the wrong amount; stored and blamed
    (invoked with ``configurable`` keys besides its thread id, if given)."""
    monkeypatch.setenv("LG_TEST_DB", str(db))
    graph = approved_refund_from_env()
    cb = AgentDebugCallback(
        dbg,
        success_check=check,
        diagnose=False,
        graph_factory="lg_graphs:approved_refund_from_env",
    )
    config: Any = {"configurable": {"thread_id": "t-cli", **configurable}, "callbacks": [cb]}
    graph.invoke({"messages": [], "amount": 0, "out": []}, config)
    graph.invoke(Command(resume="yes"), config)
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    blame_prepare(dbg, run)
    graph.checkpointer.conn.close()
    return run.id


def test_act_passes_executor_options_to_the_installed_langgraph_executor(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix changes the question the human is asked ("refund $24?" where they
    approved "$42"): by default the branch waits there; with
    ``--executor-option replay_answers=same-node`` it is given the "yes" and passes."""
    db = tmp_path / "checkpoints.db"
    run_id = approved_run(dbg, db, monkeypatch)
    dbg.close()
    waits = cli("act", run_id, "--rerun", "--policy", "auto", "--max-rounds", "1", db=db)
    assert waits.returncode == 2, waits.stderr
    assert "Loop succeeded" not in waits.stdout
    assert "interrupt" in waits.stdout and "refund $24?" in waits.stdout

    passes = rerun(run_id, "replay_answers=same-node", "recursion_limit=50", db=db)
    assert passes.returncode == 0, passes.stdout + passes.stderr
    assert "Loop succeeded" in passes.stdout
    assert "Root cause: verified by rerun" in passes.stdout


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("replay_answers=always", "replay_answers='always': expected one of"),
        ("isolate=maybe", "isolate='maybe': expected true or false (yes, on, 1; no, off, 0"),
        ("asynchronous=maybe", "asynchronous='maybe': expected true, false or auto"),
        ("recursion_limit=0", "recursion_limit='0': expected a whole number >= 1"),
        ("nope=1", "takes no option nope (it takes: replay_answers, isolate"),
        ("directive_key=", "directive_key: expected a state key"),
        ("replay_answers", "executor option 'replay_answers': expected KEY=VALUE"),
    ],
)
def test_a_bad_executor_option_is_named_before_anything_runs(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, said: str
) -> None:
    db = tmp_path / "checkpoints.db"
    run_id = approved_run(dbg, db, monkeypatch)
    dbg.close()
    done = rerun(run_id, option, db=db)
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    listed = cli("list", "--json", db=db)  # nothing was rerun
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 1, listed.stdout


def test_executor_options_need_a_rerun_and_an_executor_that_takes_them(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "checkpoints.db"
    run_id = approved_run(dbg, db, monkeypatch)
    dbg.close()
    plan = cli("act", run_id, "--executor-option", "isolate=false", db=db)
    assert plan.returncode == 2 and "--executor-option configures a rerun" in plan.stderr

    class Plain:  # an executor with no with_options
        framework = "custom"

        def rerun(self, request: Any) -> AgentTrajectory:
            raise AssertionError("not run")

    with pytest.raises(AgentDebugError, match=r"'custom' \(Plain\) takes no options"):
        configure_executor(Plain(), {"isolate": "false"})  # type: ignore[arg-type]
    installed = find_executor("langgraph", get_registry())
    assert configure_executor(installed, {}) is installed


def test_act_refuses_a_run_without_checkpoints_before_the_gate_asks(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """The installed executor's preflight runs before the gate: a run recorded with
    no checkpointer is refused saying how to add one, and no one is asked (with no
    terminal, the gate would have refused instead, hiding the reason)."""
    graph = unsaved_agent()
    cb = AgentDebugCallback(
        dbg, success_check=order_found, diagnose=False, graph_factory="lg_graphs:unsaved_agent"
    )
    graph.invoke({"messages": [("user", "Refund order A123")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    blame = next(e for e in run.events if e.agent_name == "agent")
    assert dbg.store is not None
    dbg.store.save_report(
        DiagnosticReport(
            id="r-unsaved",
            trajectory_id=run.id,
            hypotheses=[
                Hypothesis(
                    agent_name="agent", step_index=blame.step_index, strategy="t", confidence=0.9
                )
            ],
            fix=Fix(directive="look the order up", target_agent="agent"),
            metadata={"history": history_runs(dbg.history(run))},
        )
    )
    dbg.close()
    done = cli("act", run.id, "--rerun", db=tmp_path / "unused.db")
    assert done.returncode == 2
    assert "no checkpointer" in done.stdout, done.stdout + done.stderr
    assert "needs a terminal" not in done.stdout
    assert "gate ask" not in done.stdout, done.stdout


def test_a_run_judged_by_a_check_no_rerun_can_import_is_refused_before_the_gate(
    dbg: AgentDebug,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Judged by a lambda (or a function in the script run as ``__main__``): a rerun
    in another process could run the branch, tools and all, but not judge it. The
    user is told when the run is recorded, the loop refuses before the gate
    (before, the branch ran, then scoring failed), and
    ``--executor-option success_check=module:function`` gives the check."""
    db = tmp_path / "checkpoints.db"
    with caplog.at_level("WARNING", logger="agentdebug.langgraph"):
        run_id = approved_run(dbg, db, monkeypatch, check=lambda s: refunded_24(s))
    assert "has no importable name" in caplog.text and "a rerun" in caplog.text
    dbg.close()
    refused = cli("act", run_id, "--rerun", "--policy", "ask", db=db)
    assert refused.returncode == 2
    assert "a branch could not be judged" in refused.stdout, refused.stdout + refused.stderr
    assert "--executor-option success_check=module:function" in refused.stdout
    assert "gate ask" not in refused.stdout
    listed = cli("list", "--json", db=db)
    assert len(listed.stdout.splitlines()) == 1  # no branch ran

    given = rerun(run_id, "success_check=lg_graphs:refunded_24", "replay_answers=same-node", db=db)
    assert given.returncode == 0, given.stdout + given.stderr
    assert "Root cause: verified by rerun" in given.stdout
    bad = cli("act", run_id, "--rerun", "--executor-option", "success_check=lg_graphs:nope", db=db)
    assert bad.returncode != 0 and "lg_graphs has no 'nope'" in bad.stderr


def test_a_scorer_that_does_not_read_the_outcome_needs_no_check(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal is for a branch judged by its outcome: the llm scorer (or a
    reference answer, under the default one) judges it without the check."""
    from collections import OrderedDict

    from agentdebug_langgraph import LangGraphRerunExecutor, _live

    db = tmp_path / "checkpoints.db"
    run_id = approved_run(dbg, db, monkeypatch, check=lambda s: refunded_24(s))
    monkeypatch.setattr(_live, "_LIVE_CHECKS", OrderedDict())  # (as in another process)
    store = dbg.store
    assert store is not None
    run = store.load_trajectory(run_id)
    executor = LangGraphRerunExecutor(debugger=dbg)
    for scorer in ("default", "outcome", None):
        with pytest.raises(AgentDebugError, match="a branch could not be judged"):
            executor.preflight(run, scorer=scorer)
    executor.preflight(run, scorer="llm")
    executor.preflight(run.model_copy(update={"reference_answer": "refund 24"}), scorer="default")
    # and no graph to rerun either: that first (no option fixes it), then the check
    monkeypatch.setattr(_live, "_LIVE_GRAPHS", OrderedDict())
    lg = {k: v for k, v in run.metadata["langgraph"].items() if k != "graph_factory"}
    unmade = run.model_copy(update={"metadata": {**run.metadata, "langgraph": lg}})
    with pytest.raises(AgentDebugError) as refused:
        executor.preflight(unmade, scorer="outcome")
    said = str(refused.value)
    assert said.index("its graph is not in this process") < said.index("Also, a branch could")
    assert "would be left unknown" in said and "is left unknown" not in said


def test_a_secret_configurable_key_is_refused_before_the_gate_saying_how_to_give_it(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run invoked with ``configurable={"api_key": ...}`` (a secret's name: not
    stored) cannot be rerun in another process as it was: the preflight says so
    before anyone is asked (before, after the gate's approval), and how to give it
    from the command line, not only in code."""
    db = tmp_path / "checkpoints.db"
    run_id = approved_run(dbg, db, monkeypatch, api_key="sk-test-0042")
    dbg.close()
    refused = cli("act", run_id, "--rerun", "--policy", "ask", db=db)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "configurable key api_key (not stored" in refused.stdout, refused.stdout
    assert "on the command line: --executor module:function" in refused.stdout
    assert "gate ask" not in refused.stdout and "sk-test-0042" not in refused.stdout


def test_a_send_worker_is_rerun_from_the_command_line_with_a_directive_update(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A map-reduce worker's packet carries no messages: the rerun is refused,
    naming the option that gives it a ``directive_update``; with it, the corrected
    branch passes."""
    from lg_fan import fan_graph_from_env

    db = tmp_path / "checkpoints.db"
    monkeypatch.setenv("LG_TEST_DB", str(db))
    graph = fan_graph_from_env()
    cb = AgentDebugCallback(dbg, graph_factory="lg_fan:fan_graph_from_env")
    with pytest.raises(ValueError, match="item 2 is bad"):
        graph.invoke(
            {"items": [1, 2, 3], "results": []},
            {"configurable": {"thread_id": "t-fan"}, "callbacks": [cb]},
        )
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == "work"
    run_id = cb.trajectory().id
    graph.checkpointer.conn.close()
    dbg.close()
    refused = rerun(run_id, db=db)
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "the graph's state has no 'messages' key to carry the directive" in said
    assert "or directive_update=module:function" in said
    for spec, said in [
        ("NOT_A_FUNCTION", "int is not a function"),
        ("one_arg", "directive_update one_arg does not take (request, snapshot)"),
        ("too_late", "directive_update too_late is a coroutine function"),
    ]:  # (refused before anything runs: no gate, no traceback)
        bad = rerun(run_id, f"directive_update=lg_fan:{spec}", db=db)
        assert bad.returncode == 1 and said in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr and "gate" not in bad.stdout
    passes = rerun(run_id, "directive_update=lg_fan:fixed", db=db)
    assert passes.returncode == 0, passes.stdout + passes.stderr
    assert "Loop succeeded" in passes.stdout
    assert "Root cause: verified by rerun" in passes.stdout
