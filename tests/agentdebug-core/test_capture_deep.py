"""Payloads nested past what JSON encoding goes: the agent's process survives them.

orjson 3.12 and 3.13 count no nesting for tuples: a chain of about 2,000 nested
tuples corrupts the heap and aborts the process (``free(): invalid next size``),
where lists and dicts raise "Recursion limit reached" at 255 levels. The core's
dependency excludes those releases; each case runs in a process of its own, so
that a release with the fault fails the test rather than the whole suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from agentdebug.store import open_store

AGENT = r"""
import sys
from agentdebug import AgentDebug, EventType

class Box:  # an object without a JSON form, its contents behind it
    def __init__(self, value):
        self.value = value

def chain(kind, depth):
    value = 1
    for i in range(depth):
        value = {
            "tuples": lambda v: (v,),
            "tuples and lists": lambda v: (v,) if i % 2 else [v],
            "tuples in a dict": lambda v: {"k": (v,)},
        }[kind](value)
    return value

dbg = AgentDebug(sys.argv[1])
with dbg.trace(goal="deep") as t:
    t.record(EventType.TOOL_RESULT, output={"chain": chain(sys.argv[2], 5000), "status": "kept"})
    t.record(EventType.MESSAGE, output="after it")
dbg.close()
print(t.id)
"""


@pytest.mark.parametrize("kind", ["tuples", "tuples and lists", "tuples in a dict"])
def test_a_payload_of_deeply_nested_tuples_is_kept_and_the_process_lives(
    tmp_path: Path, kind: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", AGENT, str(tmp_path), kind],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"recording 5,000 nested {kind} ended the process (exit {proc.returncode}) "
        f"with orjson {orjson.__version__}: {proc.stderr[-300:]}"
    )
    trajectory = open_store(tmp_path).load_trajectory(proc.stdout.strip())
    deep, after = trajectory.events
    assert deep.output["status"] == "kept" and after.output == "after it"
    assert "output_cut" in deep.metadata["capture_notes"]  # its first 100 levels, noted
    assert "left out, 100 levels down" in orjson.dumps(deep.output["chain"]).decode()
