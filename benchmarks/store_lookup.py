#!/usr/bin/env python3
"""A run looked up by a metadata value in the SQLite store, with and without
``index_metadata``: what a resume served by another worker pays to find the run
it continues (the LangGraph plugin looks the thread's last run up by
``langgraph.thread_id``).

    python3 dev.py python benchmarks/store_lookup.py [--runs 20000] [--repeats 21]

Writes ``--runs`` run headers (LangGraph-like metadata, one thread each) into a
temporary store, then times ``list_runs(RunQuery(metadata=...), limit=1)`` for
threads spread over the store, ``--repeats`` times each: first as every header is
read, then after ``index_metadata("langgraph.thread_id")`` (whose one-off cost is
printed too). Medians and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentdebug.schema import AgentTrajectory
from agentdebug.store import RunQuery, SQLiteStore


def lookups(store: SQLiteStore, threads: list[str], repeats: int) -> float:
    """The median seconds of one lookup, over ``repeats`` rounds of ``threads``."""
    times = []
    for _ in range(repeats):
        for thread in threads:
            query = RunQuery(
                framework="langgraph",
                metadata=(("langgraph.thread_id", thread), ("langgraph.graph", "support")),
                limit=1,
            )
            t0 = time.perf_counter()
            found = store.list_runs(query)
            times.append(time.perf_counter() - t0)
            assert [r.id for r in found] == [f"run-{thread}"], found
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="store-lookup-") as home:
        store = SQLiteStore(Path(home) / "agentdebug.db")
        for i in range(args.runs):
            store.save_trajectory(
                AgentTrajectory(
                    id=f"run-t{i}",
                    framework="langgraph",
                    metadata={
                        "langgraph": {"graph": "support", "thread_id": f"t{i}", "nodes": ["a"]}
                    },
                )
            )
        threads = [f"t{i}" for i in (0, args.runs // 2, args.runs - 1)]
        scan = lookups(store, threads, args.repeats)
        t0 = time.perf_counter()
        store.index_metadata("langgraph.thread_id")
        made = time.perf_counter() - t0
        indexed = lookups(store, threads, args.repeats)
        store.close()
    print(f"store lookup by metadata, {args.runs:,} runs in SQLite")
    print(f"  every header read:      {scan * 1e3:8.2f} ms a lookup")
    print(f"  with index_metadata:    {indexed * 1e3:8.2f} ms a lookup")
    print(
        f"  ratio:                  {scan / indexed:8.0f}x  (the index made once in {made * 1e3:.0f} ms)"
    )


if __name__ == "__main__":
    main()
