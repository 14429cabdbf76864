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

Last, a failed run whose reason is 200,000 characters naming thousands of figures (a
success check that returns a dump): a rule that reads every value of the reason, not
the first few it looks for, shows here (the pack took 6.5 s on it, ``figure_scaled``
3.0 s, before the reason's values were read lazily; 0.13 s after), and one whose
reason is one word of 200,000 letters: a pattern tried from each letter of a word
shows here (``named_item_filtered_out`` took 0.5 s on 10,000 letters, 2 s on 20,000,
and a diagnosis of a 210,000-letter one 220 s; 0.10 s for all rules after).
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
    long_reason()


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
    print(f"30 node updates of 500 x 500 mappings: {_slowest(run)}")


def long_reason() -> None:
    figures = [
        f"order O-{i} was billed ${i * 7 % 9973 / 100:.2f}, not ${i:,}.50; " for i in range(1, 9000)
    ]
    one_word = "x" * 200_000  # (a pattern tried from each of a word's letters shows here)
    for what, reason in (("naming thousands of figures", "".join(figures)[:200_000]),
                         ("of one word", one_word)):  # fmt: skip
        print(f"a 200,000-character reason {what}: {_slowest(_billing_run(reason))}")


def _billing_run(reason: str) -> AgentTrajectory:
    events = [AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="bill the orders")]
    for i in range(1, 41):
        output = {"order": f"O-{i}", "billed": i * 7 % 9973 / 100, "note": f"order {i} billed"}
        for kind, out in ((EventType.AGENT_START, None), (EventType.AGENT_END, output)):
            events.append(
                AgentEvent(
                    id=f"e{len(events)}", type=kind, step_index=i, agent_name="biller", output=out
                )
            )
    return AgentTrajectory(
        id="long-reason",
        goal="bill the orders",
        events=events,
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason=reason),
    )


def _slowest(run: AgentTrajectory) -> str:
    """Every rule's time on ``run``, in one pass: the total and the five slowest."""
    ctx = RuleContext.build(run)
    spent = []
    for rule in RULES:
        start = time.perf_counter()
        list(rule.check(ctx))
        spent.append((time.perf_counter() - start, rule.id))
    spent.sort(reverse=True)
    total = sum(t for t, _ in spent)
    slowest = ", ".join(f"{rule} {t:.2f} s" for t, rule in spent[:5])
    return f"all rules {total:.2f} s; slowest: {slowest}"


if __name__ == "__main__":
    main()
