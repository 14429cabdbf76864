#!/usr/bin/env python3
"""Rule pack throughput over every Who&When trace (and every TRAIL trace).

    python3 dev.py python benchmarks/rules_throughput.py [--repeats 5]

Imports each trace once, then times ``RulePack().detect`` over all of them,
``--repeats`` times, and reports the median: traces per second, events per
second, and characters of event text per second (Hand-Crafted traces run to
300K characters, so per-trace figures alone would mislead).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from agentdebug.detect import RulePack
from agentdebug.io import TrailImporter, WhoWhenImporter, import_paths
from agentdebug.schema import AgentTrajectory
from agentdebug.text import flatten

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def measure(name: str, trajectories: list[AgentTrajectory], repeats: int) -> None:
    pack = RulePack()
    events = sum(len(t.events) for t in trajectories)
    chars = sum(
        len(flatten(e.output)) + len(flatten(e.input)) for t in trajectories for e in t.events
    )
    times = []
    findings = 0
    for _ in range(repeats):
        start = time.perf_counter()
        findings = sum(len(pack.detect(t)) for t in trajectories)
        times.append(time.perf_counter() - start)
    t = statistics.median(times)
    print(
        f"{name:<22} {len(trajectories):>5} traces {events:>7} events {chars / 1e6:>6.1f} M chars  "
        f"{t * 1000:>8.1f} ms  {len(trajectories) / t:>8.0f} traces/s  {events / t:>9.0f} events/s  "
        f"{chars / t / 1e6:>6.1f} M chars/s  {findings:>4} findings"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    groups = {
        "Who&When AG": (DATA / "whowhen" / "Algorithm-Generated", WhoWhenImporter()),
        "Who&When HC": (DATA / "whowhen" / "Hand-Crafted", WhoWhenImporter()),
        "TRAIL GAIA": (DATA / "trail" / "gaia" / "traces", TrailImporter()),
    }
    print(f"rule pack throughput, median of {args.repeats} passes")
    for name, (folder, importer) in groups.items():
        batch = import_paths([folder], importers=[importer])
        assert not batch.failures, batch.failures
        measure(name, [r.trajectory for r in batch.runs], args.repeats)


if __name__ == "__main__":
    main()
