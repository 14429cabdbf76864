#!/usr/bin/env python3
"""Rule pack throughput over every Who&When trace (and every TRAIL trace).

    python3 dev.py python benchmarks/rules_throughput.py [--repeats 5]

Imports each trace once, then times ``RulePack().detect`` over all of them,
``--repeats`` times, and reports the median: traces per second, events per
second, and characters of event text per second (Hand-Crafted traces run to
300K characters, so per-trace figures alone would mislead).

Then a synthetic failed graph run whose 30 node updates are each a 500 x 500
mapping (7.5 million values: a worst case for rules that walk payloads), with the
slowest rules' time on it, one pass: a rule that walks a payload without a budget
shows here (``unit_swapped`` took 10.8 s on it before its walk was bounded).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from agentdebug.detect import RulePack
from agentdebug.detect.pack import RULES
from agentdebug.detect.rules import RuleContext
from agentdebug.io import TrailImporter, WhoWhenImporter, import_paths
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
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
    wide_payloads()


def wide_payloads() -> None:
    wide = {f"r{i}": {f"c-{j}": j for j in range(500)} for i in range(500)}
    events = [AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="go")]
    for i in range(1, 31):
        for kind, output in ((EventType.AGENT_START, None), (EventType.AGENT_END, wide)):
            events.append(
                AgentEvent(
                    id=f"e{len(events)}", type=kind, step_index=i, agent_name=f"n{i}", output=output
                )
            )
    run = AgentTrajectory(
        id="wide",
        goal="g",
        events=events,
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="c-9999 was never written"),
    )
    ctx = RuleContext.build(run)
    spent = []
    for rule in RULES:
        start = time.perf_counter()
        list(rule.check(ctx))
        spent.append((time.perf_counter() - start, rule.id))
    spent.sort(reverse=True)
    total = sum(t for t, _ in spent)
    slowest = ", ".join(f"{rule} {t:.2f} s" for t, rule in spent[:5])
    print(f"30 node updates of 500 x 500 mappings: all rules {total:.2f} s; slowest: {slowest}")


if __name__ == "__main__":
    main()
