#!/usr/bin/env python3
"""How long an async app's event loop waits at its first failed LangGraph run.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_first_failure.py [--idle 1.0]

An async app (a ticker task measuring how late each 1 ms sleep wakes) runs a graph
three times with ``AgentDebugCallback``: once succeeding, then, after ``--idle``
seconds, twice failing (a node raises). The free-tier diagnosis of a failure runs
inline, on the loop; the first one also used to import the diagnosis (about 0.3 s),
which ``agentdebug.capture.auto.warm_up`` now does on a thread after the first
async run that did not fail. Prints, per run, its time and the loop's longest wait
during it and the 50 ms after it. Run it in a fresh process each time (the imports
are what it measures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from typing import Any, TypedDict

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langgraph.graph import START, StateGraph


class State(TypedDict):
    fail: bool


async def step(state: State) -> dict[str, Any]:
    if state["fail"]:
        raise ValueError("no such order")
    return {}


async def main(idle: float) -> None:
    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    app = g.compile()
    home = tempfile.mkdtemp(prefix="lg-first-failure-")
    dbg = AgentDebug(home)
    longest = [0.0]
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            longest[0] = max(longest[0], time.perf_counter() - t - 0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    for i, fail in enumerate((False, True, True)):
        if i == 1:
            await asyncio.sleep(idle)  # (the app idles between requests)
        longest[0] = 0.0
        cb = AgentDebugCallback(dbg)
        t = time.perf_counter()
        with contextlib.suppress(ValueError):
            await app.ainvoke({"fail": fail}, {"callbacks": [cb]})
        took = time.perf_counter() - t
        await asyncio.sleep(0.05)
        what = "fails" if fail else "succeeds"
        print(
            f"run {i} ({what}): {took * 1000:5.0f} ms; "
            f"the loop's longest wait {longest[0] * 1000:5.0f} ms"
        )
    stop = True
    await task
    dbg.close()
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=1.0, help="seconds between runs 0 and 1")
    args = parser.parse_args()
    import logging

    logging.getLogger("agentdebug").setLevel(logging.ERROR)  # (the summaries: not figures)
    asyncio.run(main(args.idle))
