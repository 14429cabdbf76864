"""The example runs end to end, as a user runs it from a fresh clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_refund_example_captures_diagnoses_forks_and_verifies(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTDEBUG_HOME": str(tmp_path / "unused")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "langgraph" / "run.py"), "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "lookup_order_by_email({'email': 'A123'})" in out  # the wrong early choice, captured
    assert "Root cause: agent at step 1" in out
    # the wrong call is listed with step 1, which decided it, before the tools node's step
    listed = [line.split()[:3] for line in out.splitlines() if line.startswith("  step ")]
    call = listed.index(["step", "1", "tool.call"])
    assert listed[call - 1] == ["step", "1", "agent.end"]
    assert listed[call + 1] == ["step", "2", "agent.start"]
    root = next(line for line in out.splitlines() if "← root cause" in line)
    assert root.startswith("→ [  1] agent  tool.call")
    assert "LangGraph fork: checkpoint" in out and "get_state_history agrees" in out
    assert "is as the run left it" in out
    assert "outcome: success (the success check passed)" in out
    assert "the diagnosis is verified by rerun." in out
    assert (tmp_path / "agentdebug.db").exists()
    assert (tmp_path / "langgraph-checkpoints.db").exists()
