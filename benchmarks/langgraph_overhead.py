#!/usr/bin/env python3
"""Capture overhead on a 1,000-step LangGraph graph: no callback, ours, agentdebugx.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_overhead.py [--steps 1000] [--repeats 5]

The graph loops one node 1,000 times (``recursion_limit`` raised to fit); each
step calls a LangChain fake chat model (``FakeMessagesListChatModel``) and a
conditional edge decides whether to go round again. So every step exercises
what a real agent step does through the callback system: a node run, a
branch-function run and a chat-model call.

Three ways to run it, each in its own fresh process, ``--repeats`` times, in
interleaved order so that the machine's noise falls on all of them alike:

- ``none``: no callback;
- ``ours``: ``AgentDebugCallback`` in ``config["callbacks"]``, recording into a
  temporary SQLite store; the time includes making the run durable (the callback
  closes the run, which flushes it to disk, before ``invoke`` returns);
- ``agentdebugx``: agentdebugx 0.5.2's ``LangChainCallbackAdapter``, with its
  ``start_trace`` and ``finish_trace`` (which writes its JSONL store) in the time.

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
impl, steps, home, latency = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
os.chdir(home)
os.environ["AGENTDEBUG_HOME"] = home
os.environ["OTEL_SDK_DISABLED"] = "true"
"""
    + GRAPH
    + r"""
if impl == "ours":
    from agentdebug import AgentDebug
    from agentdebug_langgraph import AgentDebugCallback
    dbg = AgentDebug(home)
    def run(app, n):
        app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10,
                   "callbacks": [AgentDebugCallback(dbg, goal="benchmark")]})
elif impl == "agentdebugx":
    from agentdebug import AgentDebug
    from agentdebug.adapters.langgraph import LangChainCallbackAdapter
    dbg = AgentDebug()
    def run(app, n):
        trajectory = dbg.start_trace(goal="benchmark", framework="langgraph")
        handler = LangChainCallbackAdapter(dbg, trajectory)
        app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10, "callbacks": [handler]})
        dbg.finish_trace(trajectory, success=True)
else:
    def run(app, n):
        app.invoke({"n": 0, "last": ""}, {"recursion_limit": n + 10})

warm = build(50)
run(warm, 50)
run(warm, 50)
app = build(steps)
gc.collect()
t0 = time.perf_counter()
run(app, steps)
print(json.dumps({"wall_s": time.perf_counter() - t0}))
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


def run(python: str, impl: str, steps: int, latency: float) -> float:
    with tempfile.TemporaryDirectory(prefix=f"lg-bench-{impl}-") as home:
        proc = subprocess.run(
            [python, "-c", WORKLOAD, impl, str(steps), home, str(latency)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"{impl} run failed:\n{proc.stderr}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["wall_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
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
    ours_py, ref_py = sys.executable, str(ensure_reference())
    plan = [
        ("none", ours_py),
        ("ours", ours_py),
        ("none-x", ref_py),
        ("agentdebugx", ref_py),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in plan}
    for i in range(args.repeats):
        order = plan[i % len(plan) :] + plan[: i % len(plan)]
        for name, python in order:
            times[name].append(run(python, name.removesuffix("-x"), args.steps, args.latency))
    med = {name: statistics.median(values) for name, values in times.items()}
    ours = med["ours"] / med["none"] - 1.0
    ref = med["agentdebugx"] / med["none-x"] - 1.0
    latency = f" sleeping {args.latency:g} ms per call" if args.latency else ""
    print(
        f"LangGraph capture overhead: {args.steps:,}-step graph, fake chat model{latency}, "
        f"median of {args.repeats} fresh processes each"
    )
    print(f"{'':34} {'wall (s)':>9} {'per step (us)':>14} {'overhead':>9}")
    rows = [
        ("no callback", "none", None),
        ("agentdebug-langgraph", "ours", ours),
        ("no callback (agentdebugx env)", "none-x", None),
        ("agentdebugx 0.5.2", "agentdebugx", ref),
    ]
    for label, key, over in rows:
        extra = f"{over * 100:>8.1f}%" if over is not None else f"{'':>9}"
        print(f"{label:34} {med[key]:>9.3f} {med[key] / args.steps * 1e6:>14.1f} {extra}")
    half = ours <= 0.5 * ref if ref > 0 else ours <= 0
    print(
        f"target 1, ours adds <= 15% over none: {ours * 100:.1f}% -> {'met' if ours <= 0.15 else 'MISSED'}"
    )
    print(
        f"target 2, ours adds <= half of agentdebugx's {ref * 100:.1f}%: "
        f"{ours * 100:.1f}% vs {ref * 50:.1f}% -> {'met' if half else 'MISSED'}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"median_s": med, "runs_s": times, "overhead": {"ours": ours, "agentdebugx": ref}},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
