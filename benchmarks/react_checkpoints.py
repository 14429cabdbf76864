#!/usr/bin/env python3
"""What a ReAct run's checkpoints cost as it grows: the store's size and capture time.

    python3 dev.py run agentdebug-react benchmarks/react_checkpoints.py [--steps 150,300,600] [--page 1000]

Each run is a ``ReactLoop`` whose step appends a thought and an observation to the
messages and a page of ``--page`` bytes to a notebook in its state (a research
agent's pages read), for ``--steps`` steps, captured into a fresh SQLite store. For
each it prints the capture time (the loop's wall time, checkpoints included), the
store's size on disk, and what the checkpoints would hold with the state and the
messages whole at every step (the sum of their JSON sizes): the square of the
steps, against what the checkpoints hold, their deltas.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import orjson
from agentdebug import AgentDebug
from agentdebug_react import ReactLoop, Step, StepContext


def run_once(steps: int, page: int) -> tuple[float, int, int]:
    """Capture time (s), store size (bytes), and the whole-state sum (bytes)."""
    whole = 0  # the JSON of the state and the messages before each step, summed
    size = len(b'{"pages":[]}') + len(b'[{"role":"user","content":"read everything"}]')

    def read(ctx: StepContext[Any]) -> Step:
        nonlocal whole, size
        whole += size  # (kept up as it grows: encoding it all here would be the square)
        if ctx.step == steps:
            return Step.finish(f"{len(ctx.state['pages'])} pages")
        added = [
            {"role": "assistant", "content": f"Thought: read page {ctx.step}"},
            {"role": "user", "content": f"Observation: page {ctx.step} read"},
        ]
        ctx.messages.extend(added)
        ctx.state["pages"].append({"n": ctx.step, "text": "x" * page})
        size += len(orjson.dumps(added)) + len(orjson.dumps(ctx.state["pages"][-1]))
        return Step(thought="read", action="read", action_input=ctx.step, observation="ok")

    with tempfile.TemporaryDirectory(prefix="react-checkpoints-") as home:
        dbg = AgentDebug(home)
        loop = ReactLoop(read, debugger=dbg, max_steps=steps + 1, auto_diagnose=False)
        start = time.perf_counter()
        loop.run("read everything", state={"pages": []})
        took = time.perf_counter() - start
        dbg.close()
        stored = sum(p.stat().st_size for p in Path(home).rglob("*") if p.is_file())
    return took, stored, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="150,300,600")
    parser.add_argument("--page", type=int, default=1000, help="bytes of a page in the state")
    args = parser.parse_args()
    print(f"ReAct checkpoints: a notebook growing by a {args.page:,}-byte page a step")
    print(f"{'steps':>6} {'capture':>9} {'store':>9} {'whole each step':>16}")
    for steps in (int(s) for s in args.steps.split(",")):
        took, size, whole = run_once(steps, args.page)
        print(f"{steps:>6} {took:>8.2f}s {size / 1e6:>7.1f}MB {whole / 1e6:>14.1f}MB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
