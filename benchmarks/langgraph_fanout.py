#!/usr/bin/env python3
"""Capture cost of a ``Send`` fan-out as it widens: is it linear in the branches?

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_fanout.py [--widths 250,1000,4000] [--repeats 5]

A map-reduce graph: one node fans out to N ``Send`` branches of a worker node that
returns its item. For each width, in one process, the graph runs with no callback
and with ``AgentDebugCallback`` in turn, ``--repeats`` times; printed: the median
time of each and the callback's added time per branch. Linear capture keeps the
added time per branch flat as N grows (it was quadratic before the step's senders
were sorted once per step instead of once per branch: 85 us a branch at 100
branches, 688 us at 8,000).
"""

from __future__ import annotations

import argparse
import operator
import os
import statistics
import tempfile
import time
from typing import Annotated, Any, TypedDict

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langgraph.graph import START, StateGraph
from langgraph.types import Send


class Fan(TypedDict):
    n: int
    results: Annotated[list[int], operator.add]


def build() -> Any:
    g = StateGraph(Fan)
    g.add_node("fan", lambda state: {})
    g.add_node("work", lambda packet: {"results": [packet["i"]]})
    g.add_edge(START, "fan")
    g.add_conditional_edges(
        "fan", lambda state: [Send("work", {"i": i}) for i in range(state["n"])], ["work"]
    )
    return g.compile()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", default="250,1000,4000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    graph = build()
    with tempfile.TemporaryDirectory(prefix="lg-fanout-") as home:
        dbg = AgentDebug(home)
        print(f"{'branches':>9} {'none (s)':>9} {'ours (s)':>9} {'added a branch (us)':>20}")
        for width in (int(w) for w in args.widths.split(",")):
            times: dict[str, list[float]] = {"none": [], "ours": []}
            for i in range(args.repeats):
                for name in ("none", "ours") if i % 2 == 0 else ("ours", "none"):
                    config: Any = {}
                    if name == "ours":
                        config["callbacks"] = [AgentDebugCallback(dbg, diagnose=False)]
                    start = time.perf_counter()
                    graph.invoke({"n": width, "results": []}, config)
                    times[name].append(time.perf_counter() - start)
            none, ours = statistics.median(times["none"]), statistics.median(times["ours"])
            added = (ours - none) / width * 1e6
            print(f"{width:>9} {none:>9.3f} {ours:>9.3f} {added:>20.0f}")
        dbg.close()


if __name__ == "__main__":
    main()
