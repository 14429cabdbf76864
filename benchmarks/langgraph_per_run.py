#!/usr/bin/env python3
"""The callback's fixed cost per graph run, on short graphs with no model.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_per_run.py [--runs 300]

``langgraph_overhead.py`` measures a 1,000-step run, where what a run costs once
(opening it in the store, and for ``invoke`` waiting until its end is on disk)
disappears in the average. Here: chains of 1, 3 and 10 plain nodes, each invoked
``--runs`` times without a callback and with ``AgentDebugCallback`` in turn (sync
``invoke``, then ``ainvoke`` on one event loop), in one process; printed: the median
time of a run each way and what the callback adds. ``ainvoke`` does not wait for the
disk (the writer thread writes the run's end), ``invoke`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any, TypedDict

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langgraph.graph import START, StateGraph


class Count(TypedDict):
    n: int


def chain(nodes: int) -> Any:
    g = StateGraph(Count)
    before = START
    for i in range(nodes):
        g.add_node(f"n{i}", lambda state: {"n": state["n"] + 1})
        g.add_edge(before, f"n{i}")
        before = f"n{i}"
    return g.compile()


def line(how: str, nodes: int, without: list[float], with_: list[float]) -> str:
    a, b = statistics.median(without) * 1e3, statistics.median(with_) * 1e3
    return (
        f"{how:<7} {nodes:>3} node(s): without {a:.2f} ms, with {b:.2f} ms "
        f"(+{b - a:.2f} ms a run, x{b / a:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lg-per-run-") as home:
        dbg = AgentDebug(home)
        cb = AgentDebugCallback(dbg, diagnose=False)
        for nodes in (1, 3, 10):
            graph = chain(nodes)
            times: dict[bool, list[float]] = {False: [], True: []}

            def once(traced: bool, graph: Any = graph, times: Any = times) -> None:
                start = time.perf_counter()
                graph.invoke({"n": 0}, {"callbacks": [cb]} if traced else {})
                times[traced].append(time.perf_counter() - start)

            for i in range(30 + args.runs):
                if i == 30:  # (warmed up)
                    times[False].clear()
                    times[True].clear()
                for traced in (False, True) if i % 2 else (True, False):
                    once(traced)
            print(line("invoke", nodes, times[False], times[True]))

        async def served(nodes: int) -> None:
            graph = chain(nodes)
            times: dict[bool, list[float]] = {False: [], True: []}
            for i in range(args.runs + 30):
                for traced in (False, True) if i % 2 else (True, False):
                    start = time.perf_counter()
                    await graph.ainvoke({"n": 0}, {"callbacks": [cb]} if traced else {})
                    if i >= 30:  # (after warming up)
                        times[traced].append(time.perf_counter() - start)
            print(line("ainvoke", nodes, times[False], times[True]))

        for nodes in (1, 10):
            asyncio.run(served(nodes))
        dbg.close()


if __name__ == "__main__":
    main()
