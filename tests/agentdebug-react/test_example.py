"""The example, end to end, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_the_example_runs_the_whole_loop(tmp_path: Path) -> None:
    home = tmp_path / "example-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTDEBUG_", "OPENAI_"))}
    env["AGENTDEBUG_CONFIG"] = str(tmp_path / "no-config.toml")
    proc = subprocess.run(
        [sys.executable, "examples/react/run.py", "--home", str(home)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "final answer '107550'" in out and "FAILED" in out  # the failing run, captured
    assert "free tier" in out  # the diagnosis says it used no model
    assert "Root cause: analyst at step 1" in out
    assert (
        'Fix: At step 1, analyst: read_file(q3-2024.csv) failed: "FileNotFoundError: [Errno 2] '
        "No such file or directory: 'q3-2024.csv'\". Locate the resource first"
    ) in out
    assert "gate auto: approved" in out
    assert "loop status: succeeded; verified by rerun: True" in out
    assert "First divergence: step 1, an event only in B." in out  # the directive message
    assert "B step   4 final_answer  analyst: 117200" in out
    assert "the diagnosis is verified by rerun" in out
    assert "agentdebug diagnosis" in proc.stderr  # the automatic diagnosis's summary
    # the commands it prints work: the agentdebug CLI reruns the stored run again
    cmd = next(line for line in out.splitlines() if " act " in line)
    run_id = cmd.split(" act ")[1].split()[0]
    act = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentdebug",
            "act",
            run_id,
            "--rerun",
            "--policy",
            "auto",
            "--executor",
            "examples.react.agent:make_executor",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "AGENTDEBUG_HOME": str(home)},
        timeout=120,
    )
    assert act.returncode == 0, act.stdout + act.stderr
    assert "Loop succeeded" in act.stdout
    # and without --executor: the installed plugin rebuilds the loop from the run's factory
    plugin = subprocess.run(
        [sys.executable, "-m", "agentdebug", "act", run_id, "--rerun", "--policy", "auto"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "AGENTDEBUG_HOME": str(home)},
        timeout=120,
    )
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "Loop succeeded" in plugin.stdout
