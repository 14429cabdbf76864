#!/usr/bin/env python3
"""Capture cost, memory and load time for 100,000 events, against agentdebugx 0.5.2.

    python3 dev.py python benchmarks/capture.py [--events 100000] [--repeats 3]

agentdebugx (PyPI, the reference implementation of this design) imports as
``agentdebug`` too, so each implementation runs in its own virtual environment and
its own subprocess; the reference gets ``.venvs/bench-agentdebugx`` (built on first
use). Both run the same workload: one trace, N tool-result events with an agent
name, a step index and a short output, then close, then load the run back.

Figures (per event, median of ``--repeats`` runs, each in a fresh process):
- time: from the first ``record`` to the end of the ``with`` block, which for both
  includes making the events durable on disk;
- memory: tracemalloc's peak during recording and closing (a separate run, since
  tracing slows everything down);
- load: reading the stored run back into a trajectory object.
Ratios are agentdebug / agentdebugx measured in the same invocation, the runs of
the two interleaved, so the noise of a shared machine mostly cancels.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF_ENV = ROOT / ".venvs" / "bench-agentdebugx"
REF_SPEC = "agentdebugx==0.5.2"

WORKLOAD = r"""
import gc, json, os, sys, time, tracemalloc
mode, n, impl, home = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.chdir(home)
os.environ["AGENTDEBUG_HOME"] = home
from agentdebug import AgentDebug, EventType
if impl == "ours":
    dbg = AgentDebug(home)
else:
    dbg = AgentDebug()
names = ["planner", "searcher", "booker", "verifier", "writer"]
outputs = ["result %d" % i for i in range(n)]
gc.collect()
if mode == "memory":
    tracemalloc.start()
t0 = time.perf_counter()
with dbg.trace(goal="benchmark", framework="bench") as t:
    for i in range(n):
        t.record(EventType.TOOL_RESULT, agent_name=names[i % 5], step_index=i, output=outputs[i])
    t1 = time.perf_counter()
t2 = time.perf_counter()
out = {"record_s": t1 - t0, "total_s": t2 - t0}
if mode == "memory":
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out.update(peak_bytes=peak, retained_bytes=current)
if mode == "load":
    if impl == "ours":
        store = dbg.store
        run_id = t.id
        load = lambda: store.load_trajectory(run_id)
    else:
        from agentdebug.runtime.storage import JsonlTraceStore
        store = JsonlTraceStore(".agentdebug/traces.jsonl")
        run_id = store.list_traces()[-1]
        load = lambda: store.load_trajectory(run_id)
    t3 = time.perf_counter()
    traj = load()
    out["load_s"] = time.perf_counter() - t3
    out["loaded_events"] = len(traj.events)
print(json.dumps(out))
"""


def ensure_reference() -> Path:
    py = REF_ENV / "bin" / "python"
    if not py.exists():
        print(f"building {REF_ENV.relative_to(ROOT)} with {REF_SPEC} ...", file=sys.stderr)
        venv.EnvBuilder(with_pip=True, clear=True).create(REF_ENV)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", REF_SPEC],
            check=True,
        )
    return py


def run(python: str, impl: str, mode: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"capture-{impl}-") as home:
        proc = subprocess.run(
            [python, "-c", WORKLOAD, mode, str(n), impl, home],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"{impl} {mode} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    n = args.events
    impls = {"ours": sys.executable, "agentdebugx": str(ensure_reference())}
    results: dict[str, dict[str, float]] = {}
    # Interleaved (ours, reference, ours, ...), so that a busy spell on the shared
    # machine falls on both implementations alike rather than on one of them.
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for mode in ("time", "memory", "load"):
        for _ in range(args.repeats):
            for impl, python in impls.items():
                runs.setdefault((impl, mode), []).append(run(python, impl, mode, n))
    for impl in impls:
        timing, memory, loads = (runs[impl, mode] for mode in ("time", "memory", "load"))
        assert all(r["loaded_events"] >= n for r in loads), loads
        results[impl] = {
            "record_us": statistics.median(r["record_s"] for r in timing) / n * 1e6,
            "total_us": statistics.median(r["total_s"] for r in timing) / n * 1e6,
            "peak_bytes": statistics.median(r["peak_bytes"] for r in memory) / n,
            "retained_bytes": statistics.median(r["retained_bytes"] for r in memory) / n,
            "load_s": statistics.median(r["load_s"] for r in loads),
        }
    ours, ref = results["ours"], results["agentdebugx"]
    rows = [
        ("time per event, hot path (us)", "record_us", "{:.2f}"),
        ("time per event, incl. durable close (us)", "total_us", "{:.2f}"),
        ("peak memory per event (bytes)", "peak_bytes", "{:.0f}"),
        ("memory kept after close, per event (bytes)", "retained_bytes", "{:.0f}"),
        (f"load {n:,} events back (s)", "load_s", "{:.3f}"),
    ]
    print(f"capture benchmark: {n:,} events, median of {args.repeats} runs each")
    print(f"{'':46} {'agentdebug':>12} {'agentdebugx':>12} {'ratio':>8}")
    for label, key, fmt in rows:
        ratio = ours[key] / ref[key] if ref[key] else float("nan")
        print(f"{label:46} {fmt.format(ours[key]):>12} {fmt.format(ref[key]):>12} {ratio:>8.2f}")
    print(f"load speed-up: {ref['load_s'] / ours['load_s']:.1f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
