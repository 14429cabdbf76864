#!/usr/bin/env python3
"""The LangGraph callback's overhead counted in executed instructions, not time.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_instructions.py [--variants none,empty,minimal,ours]

Wall time on a shared machine moves by several points from one minute to the
next; the number of instructions a step executes does not. Each variant of
``benchmarks/langgraph_ablation.py`` (``none``, ``empty``, ``minimal``,
``unstored``, ``ours``) runs the overhead benchmark's graph under valgrind's
callgrind, once for ``--short`` steps and once for ``--long``; the difference
between the two, divided by the steps between them, is a step's count with the
process's start-up cancelled. Threads are counted apart: the graph's own thread
(what the graph waits for), and the writer and store threads (SQLite runs there
without the GIL, on the other core). A count moves by about 1 % between
invocations (hash seeds, thread timing), against several points for time.

Needs valgrind (``apt-get install valgrind``); about a minute per run, two at a time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent

# One run of a variant: the ablation's makers, the overhead benchmark's graph,
# warmed up on a short graph first (imports, first-call costs) as the timed runs are.
RUN = r"""
import os, sys, tempfile
os.environ["OTEL_SDK_DISABLED"] = "true"
sys.path.insert(0, sys.argv[3])
import langgraph_ablation as ab
from agentdebug import AgentDebug
variant, steps = sys.argv[1], int(sys.argv[2])
home = tempfile.mkdtemp(prefix="lg-instructions-")
dbg = AgentDebug(home)
make = {
    "none": lambda: None,
    "empty": lambda: ab.Empty(dbg),
    "minimal": lambda: ab.Minimal(dbg),
    "unstored": lambda: ab.Unstored(dbg),
    "ours": lambda: ab.AgentDebugCallback(dbg),
}[variant]
build = ab.graph_builder()
for n in (20, steps):
    handler = make()
    config = {"recursion_limit": n + 10}
    if handler is not None:
        config["callbacks"] = [handler]
    build(n).invoke({"n": 0, "last": ""}, config)
dbg.close()
import shutil
shutil.rmtree(home, ignore_errors=True)
"""


def counted(variant: str, steps: int, out: Path) -> dict[int, int]:
    """Instructions by thread (1: the graph's) of one run of ``variant``."""
    prefix = out / f"{variant}.{steps}"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={prefix}",
            sys.executable,
            "-c",
            RUN,
            variant,
            str(steps),
            str(HERE),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    by_thread: dict[int, int] = {}
    for path in out.glob(f"{variant}.{steps}-*"):
        found = re.search(r"^(?:totals|summary):\s*(\d+)", path.read_text(), re.M)
        if found:
            by_thread[int(path.name.rsplit("-", 1)[1])] = int(found.group(1))
    return by_thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="none,empty,minimal,ours")
    parser.add_argument("--short", type=int, default=100)
    parser.add_argument("--long", type=int, default=400)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    variants = [v for v in args.variants.split(",") if v]
    if "none" not in variants:
        variants.insert(0, "none")
    span = args.long - args.short
    with tempfile.TemporaryDirectory(prefix="lg-callgrind-") as tmp:
        out = Path(tmp)
        jobs = [(v, n) for v in variants for n in (args.short, args.long)]
        with ThreadPoolExecutor(2) as pool:
            counts = dict(zip(jobs, pool.map(lambda job: counted(*job, out), jobs), strict=True))
    print(
        f"LangGraph callback, instructions per step (callgrind; {args.long} - {args.short} "
        "steps of the overhead benchmark's graph)"
    )
    print(f"{'':10} {'graph thread':>13} {'added':>8} {'other threads':>14}")
    base = None
    for v in variants:
        short, long = counts[(v, args.short)], counts[(v, args.long)]
        per = {t: (long.get(t, 0) - short.get(t, 0)) / span for t in set(short) | set(long)}
        main_thread = per.get(1, 0.0)
        others = sum(c for t, c in per.items() if t != 1)
        if base is None:
            base = main_thread
        added = f"{(main_thread / base - 1) * 100:+.1f}%" if v != "none" else ""
        print(f"{v:10} {main_thread / 1e6:>11.3f} M {added:>8} {others / 1e3:>12.1f} k")


if __name__ == "__main__":
    main()
