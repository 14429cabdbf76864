"""Workers that open a store that does not exist yet, all at once (a first deploy
with several workers), each get it: none is refused for a table another just made
or for the switch to WAL mode another holds (before, the losers kept every run in
memory for good)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

OPEN = """
import sys, time
from agentdebug import AgentDebug
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
dbg = AgentDebug(sys.argv[1])
with dbg.trace(f"worker {sys.argv[3]}") as t:
    t.record("user_input", agent_name="user", input="hi")
dbg.close()
print("stored" if dbg.store is not None else "refused")
"""


def test_workers_opening_a_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    for trial in range(3):
        store = tmp_path / f"store-{trial}"
        start = time.time() + 2  # (all past their imports, then at once)
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN, str(store), str(start), str(n)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "OTEL_SDK_DISABLED": "true"},
            )
            for n in range(4)
        ]
        said = [w.communicate(timeout=120) for w in workers]
        assert [out.strip() for out, _ in said] == ["stored"] * 4, [err for _, err in said]
        assert not any("cannot open the store" in err for _, err in said)
        from agentdebug.store import open_store

        opened = open_store(store)
        assert len(opened.list_runs()) == 4
        opened.close()
