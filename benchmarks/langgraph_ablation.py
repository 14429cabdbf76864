#!/usr/bin/env python3
"""Where the LangGraph callback's overhead goes: ablations in one process.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_ablation.py [--steps 1000] [--repeats 21]

The graph of ``benchmarks/langgraph_overhead.py`` (its ``GRAPH``: one node looping
1,000 times, a fake chat model call per step), run in one process with each variant in turn,
interleaved, ``--repeats`` times:

- ``none``: no callback;
- ``empty``: a handler with the callback's class and flags whose methods do
  nothing: what LangChain costs to hand a handler the step's six events;
- ``unstored``: the callback, its events built and encoded but dropped instead of
  queued for the store (no retained bytes, no writer or store thread work);
- ``ours``: the callback as shipped, into a temporary SQLite store.

It prints each variant's median time per step and its overhead over ``none``:
the median over rounds of its time against that round's ``none``, with a 95 %
confidence interval (as ``langgraph_overhead.py`` computes it). In one process
the caches and the heap are warm, so figures can run a point or so below the
fresh processes of ``langgraph_overhead.py``; compare variants within one
invocation.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))
from langgraph_overhead import GRAPH, median_ci  # the same graph as the overhead benchmark


def graph_builder() -> Callable[[int], Any]:
    space: dict[str, Any] = {"latency": 0.0}
    exec(GRAPH, space)
    build: Callable[[int], Any] = space["build"]
    return build


class Empty(AgentDebugCallback):
    """The callback's class and flags; every method the graph calls does nothing."""

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_chain_end(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        pass


def _drop(item: Any) -> None:
    pass


class Unstored(AgentDebugCallback):
    """The callback, with the run's encoded events dropped instead of queued."""

    def _session_for(self, *args: Any, **kwargs: Any) -> Any:
        session, owns = super()._session_for(*args, **kwargs)
        session._sink = _drop  # bound by the emitter made right after this
        return session, owns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="lg-ablation-")
    dbg = AgentDebug(home)
    makers = {
        "none": None,
        "empty": lambda: Empty(dbg, goal="ablation"),
        "unstored": lambda: Unstored(dbg, goal="ablation"),
        "ours": lambda: AgentDebugCallback(dbg, goal="ablation"),
    }
    app = graph_builder()(args.steps)

    def run(name: str) -> float:
        config: dict[str, Any] = {"recursion_limit": args.steps + 10}
        make = makers[name]
        if make is not None:
            config["callbacks"] = [make()]
        gc.collect()
        t0 = time.perf_counter()
        app.invoke({"n": 0, "last": ""}, config)
        return time.perf_counter() - t0

    names = list(makers)
    for name in names:  # warm up
        run(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(args.repeats):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            times[name].append(run(name))
    print(
        f"LangGraph callback ablation: {args.steps:,}-step graph, one process, "
        f"{args.repeats} interleaved rounds (each variant once a round)"
    )
    print(f"{'':10} {'per step (us)':>14} {'overhead':>9} {'95% CI':>13}")
    for name in names:
        med = statistics.median(times[name])
        if name == "none":
            print(f"{name:10} {med / args.steps * 1e6:>14.1f}")
            continue
        # against the same round's run without a callback (the machine drifts)
        ratios = [t / b - 1.0 for t, b in zip(times[name], times["none"], strict=True)]
        over, lo, hi = median_ci(ratios)
        ci = f"{lo * 100:.1f}-{hi * 100:.1f}%"
        print(f"{name:10} {med / args.steps * 1e6:>14.1f} {over * 100:>8.1f}% {ci:>13}")
    dbg.close()


if __name__ == "__main__":
    main()
