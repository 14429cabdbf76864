#!/usr/bin/env python3
"""Capture overhead on a 1,000-step LangGraph graph: no callback, ours, agentdebugx.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_overhead.py [--steps 1000] [--repeats 5]

The graph loops one node 1,000 times (``recursion_limit`` raised to fit); each
step calls a LangChain fake chat model (``FakeMessagesListChatModel``) and a
conditional edge decides whether to go round again. So every step exercises
what a real agent step does through the callback system: a node run, a
branch-function run and a chat-model call.

Three ways to run it:

- ``none``: no callback;
- ``ours``: ``AgentDebugCallback`` in ``config["callbacks"]``, recording into a
  temporary SQLite store; the time includes making the run durable (the callback
  closes the run, which flushes it to disk, before ``invoke`` returns);
- ``agentdebugx``: agentdebugx 0.5.2's ``LangChainCallbackAdapter``, with its
  ``start_trace`` and ``finish_trace`` (which writes its JSONL store) in the time.

Each of ``--repeats`` fresh processes runs one implementation and ``none`` in
turn, ``--pairs`` times each (after warming both up), alternating which goes
first; the processes for ours and for agentdebugx are interleaved. The overhead is
the median over all pairs of ``with / without`` (a pair's two runs are
neighbours in time and share a process, so the machine's drift and a process's
memory layout, which move a single run by 10 % here, fall on both), with a 95 %
confidence interval for that median (distribution-free: order statistics of the
pairs' ratios). The target is called met only when the whole interval is under
15 %, missed when the whole interval is over it, and unsettled otherwise. The
overhead of the medians of all with and all without runs is printed too.

agentdebugx imports as ``agentdebug`` too, so it runs in its own virtual
environment, ``.venvs/bench-agentdebugx-langgraph`` (built on first use, with the
same langgraph and langchain-core versions as ours). Each implementation's
overhead is measured against the no-callback time in its own environment.
Targets: ours adds at most 15% over none, and at most half of what agentdebugx adds.

``--latency MS`` makes the fake model sleep per call, as a model behind a network
does; the graph then waits, and the writer thread's work no longer competes with it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import venv
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF_ENV = ROOT / ".venvs" / "bench-agentdebugx-langgraph"
REF_SPEC = "agentdebugx==0.5.2"

# The graph (``build(limit)``), given ``latency`` in ms; benchmarks/langgraph_ablation.py
# runs the same one.
GRAPH = r"""
from typing import TypedDict
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph

class State(TypedDict):
    n: int
    last: str

model = FakeMessagesListChatModel(
    responses=[AIMessage(content="next")], sleep=latency / 1000 if latency else None
)

def agent(state):
    reply = model.invoke([HumanMessage(content=f"step {state['n']}")])
    return {"n": state["n"] + 1, "last": reply.content}

def build(limit):
    def route(state):
        return "agent" if state["n"] < limit else END
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["agent", END])
    return g.compile()
"""

WORKLOAD = (
    r"""
import gc, json, os, sys, time
impl, steps, home, latency, pairs = (
    sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
)
os.chdir(home)
os.environ["AGENTDEBUG_HOME"] = home
os.environ["OTEL_SDK_DISABLED"] = "true"
"""
    + GRAPH
    + r"""
def plain(app, n):
    app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10})

if impl == "ours":
    from agentdebug import AgentDebug
    from agentdebug_langgraph import AgentDebugCallback
    dbg = AgentDebug(home)
    def traced(app, n):
        app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10,
                   "callbacks": [AgentDebugCallback(dbg, goal="benchmark")]})
else:
    from agentdebug import AgentDebug
    from agentdebug.adapters.langgraph import LangChainCallbackAdapter
    dbg = AgentDebug()
    def traced(app, n):
        trajectory = dbg.start_trace(goal="benchmark", framework="langgraph")
        handler = LangChainCallbackAdapter(dbg, trajectory)
        app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10, "callbacks": [handler]})
        dbg.finish_trace(trajectory, success=True)

def timed(run, app, n):
    gc.collect()
    t0 = time.perf_counter()
    run(app, n)
    return time.perf_counter() - t0

warm = build(50)
for run in (plain, traced, plain, traced):
    run(warm, 50)
app = build(steps)
out = {"none": [], impl: []}
for i in range(pairs):
    order = [("none", plain), (impl, traced)]
    for name, run in order if i % 2 == 0 else order[::-1]:
        out[name].append(timed(run, app, steps))
print(json.dumps(out))
"""
)


def ensure_reference() -> Path:
    """The agentdebugx environment, with our langgraph/langchain-core versions."""
    py = REF_ENV / "bin" / "python"
    pins = [f"{name}=={metadata.version(name)}" for name in ("langgraph", "langchain-core")]
    stamp = REF_ENV / ".bench-stamp"
    want = " ".join([REF_SPEC, *pins])
    if not py.exists() or not stamp.exists() or stamp.read_text() != want:
        print(f"building {REF_ENV.relative_to(ROOT)} with {want} ...", file=sys.stderr)
        venv.EnvBuilder(with_pip=True, clear=True).create(REF_ENV)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *want.split()],
            check=True,
        )
        stamp.write_text(want)
    return py


def run(python: str, impl: str, steps: int, latency: float, pairs: int) -> dict[str, list[float]]:
    """One fresh process: ``pairs`` runs each of ``none`` and ``impl``, in turn."""
    with tempfile.TemporaryDirectory(prefix=f"lg-bench-{impl}-") as home:
        proc = subprocess.run(
            [python, "-c", WORKLOAD, impl, str(steps), home, str(latency), str(pairs)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"{impl} run failed:\n{proc.stderr}")
    out: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def median_ci(values: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """The median and a distribution-free ~95 % confidence interval for it: the
    order statistics at ranks n/2 -+ z*sqrt(n)/2 (the binomial's normal limit)."""
    ordered = sorted(values)
    n = len(ordered)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(ordered), ordered[lo], ordered[hi]


def verdict(lo: float, hi: float, limit: float) -> str:
    if hi <= limit:
        return "met"
    if lo > limit:
        return "MISSED"
    return "not settled (the interval straddles it)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per implementation")
    parser.add_argument("--pairs", type=int, default=5, help="runs with and without, per process")
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="milliseconds the fake model sleeps per call (0: a CPU-bound graph, the default)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    try:
        import agentdebug_langgraph  # noqa: F401
    except ImportError:
        raise SystemExit(
            "run me with the plugin's environment: "
            "python3 dev.py run agentdebug-langgraph benchmarks/langgraph_overhead.py"
        ) from None
    plan = [("ours", sys.executable), ("agentdebugx", str(ensure_reference()))]
    runs: dict[str, dict[str, list[float]]] = {name: {"none": [], name: []} for name, _ in plan}
    for i in range(args.repeats):
        for name, python in plan[i % 2 :] + plan[: i % 2]:
            got = run(python, name, args.steps, args.latency, args.pairs)
            for key, values in got.items():
                runs[name][key].extend(values)
    figures: dict[str, dict[str, float]] = {}
    for name, _ in plan:
        with_, without = runs[name][name], runs[name]["none"]
        ratios = [a / b - 1.0 for a, b in zip(with_, without, strict=True)]
        med, lo, hi = median_ci(ratios)
        figures[name] = {
            "none_s": statistics.median(without),
            "with_s": statistics.median(with_),
            "overhead": med,
            "ci_low": lo,
            "ci_high": hi,
            "of_medians": statistics.median(with_) / statistics.median(without) - 1.0,
        }
    latency = f" sleeping {args.latency:g} ms per call" if args.latency else ""
    n = args.repeats * args.pairs
    print(
        f"LangGraph capture overhead: {args.steps:,}-step graph, fake chat model{latency}; "
        f"{n} pairs (with, without) each, in {args.repeats} fresh processes"
    )
    print(
        f"{'':24} {'no callback':>12} {'with it':>9} {'per step':>9} "
        f"{'overhead':>9} {'95% CI':>15} {'of medians':>11}"
    )
    for label, name in (("agentdebug-langgraph", "ours"), ("agentdebugx 0.5.2", "agentdebugx")):
        f = figures[name]
        ci = f"{f['ci_low'] * 100:.1f}-{f['ci_high'] * 100:.1f}%"
        print(
            f"{label:24} {f['none_s']:>11.3f}s {f['with_s']:>8.3f}s "
            f"{f['with_s'] / args.steps * 1e6:>7.0f}us {f['overhead'] * 100:>8.1f}% "
            f"{ci:>15} {f['of_medians'] * 100:>10.1f}%"
        )
    ours, ref = figures["ours"], figures["agentdebugx"]
    print(
        f"target 1, ours adds <= 15% over none: {ours['overhead'] * 100:.1f}% "
        f"(95% CI {ours['ci_low'] * 100:.1f}-{ours['ci_high'] * 100:.1f}%) -> "
        f"{verdict(ours['ci_low'], ours['ci_high'], 0.15)}"
    )
    # ours against half of agentdebugx's: met when ours' upper bound is under half
    # of agentdebugx's lower bound
    half_lo, half_hi = ref["ci_low"] / 2, ref["ci_high"] / 2
    two = (
        "met"
        if ours["ci_high"] <= half_lo
        else "MISSED"
        if ours["ci_low"] > half_hi
        else "not settled (the intervals overlap)"
    )
    print(
        f"target 2, ours adds <= half of agentdebugx's {ref['overhead'] * 100:.1f}%: "
        f"{ours['overhead'] * 100:.1f}% vs {ref['overhead'] * 50:.1f}% -> {two}"
    )
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "runs_s": runs}, indent=2))


if __name__ == "__main__":
    main()
