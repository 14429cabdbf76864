#!/usr/bin/env python3
"""Where the LangGraph callback's overhead goes: ablations in one process.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_ablation.py [--steps 1000] [--repeats 21] [--variants none,unstored,ours]

The graph of ``benchmarks/langgraph_overhead.py`` (its ``GRAPH``: one node looping
1,000 times, a fake chat model call per step), run in one process with each variant in turn,
interleaved, ``--repeats`` times:

- ``none``: no callback;
- ``empty``: a handler with the callback's class and flags whose methods do
  nothing: what LangChain costs to hand a handler the step's six events;
- ``minimal``: a floor, not a handler to use: the fewest operations that record
  this graph's three events a step (a node's start and end, the model call) through
  the same emitter and store, with none of the callback's bookkeeping (subgraphs,
  ``Send``, retries, checkpoints, streams, prompts told apart);
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
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug, EventType
from agentdebug_langgraph import AgentDebugCallback
from agentdebug_langgraph._convert import message as _message

sys.path.insert(0, str(Path(__file__).resolve().parent))
from langgraph_overhead import GRAPH, median_ci  # the same graph as the overhead benchmark

_START, _END, _RESPONSE = EventType.AGENT_START, EventType.AGENT_END, EventType.LLM_RESPONSE


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


class Minimal(AgentDebugCallback):
    """The fewest operations that record this graph's events as the callback does
    (the same documents, emitter and store): what any LangChain handler pays to
    record a step at all. Knows nothing but this benchmark's graph."""

    def on_chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
        md = kw.get("metadata") or {}
        node = md.get("langgraph_node")
        run_id = kw["run_id"]
        if node is None:
            if md.get("ls_integration") == "langgraph":
                self._start_graph(inputs, run_id, md, kw.get("name"))
                self._run = self._roots[run_id.int]
            return
        if kw.get("name") != node:
            return
        run = self._run
        step = next(run.steps)
        meta = {
            "node": node,
            "langgraph_step": md.get("langgraph_step"),
            "task_id": md.get("langgraph_checkpoint_ns"),
            "triggers": md.get("langgraph_triggers"),
        }
        doc = {
            "id": None,
            "type": _START,
            "step_index": step,
            "timestamp": None,
            "agent_name": node,
            "module": "langgraph.node",
            "parent_id": run.input_event,
            "metadata": meta,
        }
        self._open[run_id.int] = (step, run.emit(doc, node), time.perf_counter(), node)

    def on_chain_end(self, outputs: Any, **kw: Any) -> None:
        key = kw["run_id"].int
        rec = self._open.pop(key, None)
        if rec is None:
            root = self._roots.pop(key, None)
            if root is not None:
                self._end_graph(root, outputs, None)
            return
        doc = {
            "id": None,
            "type": _END,
            "step_index": rec[0],
            "timestamp": None,
            "agent_name": rec[3],
            "module": "langgraph.node",
            "parent_id": rec[1],
            "duration_ms": (time.perf_counter() - rec[2]) * 1000.0,
            "output": outputs,
        }
        self._run.emit(doc, rec[3])

    def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
        rec = self._open[kw["parent_run_id"].int]
        self._asking[kw["run_id"].int] = (rec, messages[0], time.perf_counter())

    def on_llm_end(self, response: Any, **kw: Any) -> None:
        rec, prompt, started = self._asking.pop(kw["run_id"].int)
        doc = {
            "id": None,
            "type": _RESPONSE,
            "step_index": rec[0],
            "timestamp": None,
            "agent_name": rec[3],
            "module": "langchain.chat_model",
            "parent_id": rec[1],
            "duration_ms": (time.perf_counter() - started) * 1000.0,
            "input": prompt,
            "output": _message(response.generations[0][0].message),
            "metadata": {"model": "fake"},
        }
        self._run.emit(doc, rec[3])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: dict[int, Any] = {}
        self._asking: dict[int, Any] = {}
        self._run: Any = None


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
    parser.add_argument(
        "--variants",
        default="none,empty,minimal,unstored,ours",
        help="comma-separated, from none, empty, minimal, unstored, ours (none always runs)",
    )
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="lg-ablation-")
    dbg = AgentDebug(home)
    makers = {
        "none": None,
        "empty": lambda: Empty(dbg, goal="ablation"),
        "minimal": lambda: Minimal(dbg, goal="ablation"),
        "unstored": lambda: Unstored(dbg, goal="ablation"),
        "ours": lambda: AgentDebugCallback(dbg, goal="ablation"),
    }
    wanted = ["none", *(v for v in args.variants.split(",") if v and v != "none")]
    unknown = [v for v in wanted if v not in makers]
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(unknown)}; known: {', '.join(makers)}")
    makers = {name: makers[name] for name in wanted}
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
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
