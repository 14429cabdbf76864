#!/usr/bin/env python3
"""Every strategy dry-run through the local OpenAI-compatible server on Who&When.

    python3 dev.py python benchmarks/dry_run.py [--strategies heuristic,all-at-once,...]

The server (agentdebug.llm.testing.ScriptedServer with the schema answerer)
answers each request with a minimal valid instance of the requested JSON schema,
and reports usage with agentdebug's token counter, as a real server reports its
own. So the figures are what each strategy *asks* of a model: prompt tokens and
calls per trace, and the wall time of the harness itself. The answers carry no
judgement: the accuracy columns mean nothing and are not printed. How a dry-run
answer steers a strategy: step-by-step hears "not decisive" at every step and so
reads every step (its worst case); binary search always hears "first half"; the
router sees a confident-less disagreement and escalates.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from agentdebug.bench import run_whowhen
from agentdebug.bench.metrics import BUCKETS, bucket_of, spread
from agentdebug.llm import LLMSettings
from agentdebug.llm.testing import ScriptedServer, schema_answerer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "whowhen"
DEFAULT = "heuristic,all-at-once,step-by-step,binary-search,lifecycle,deepdebug,auto"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategies", default=DEFAULT)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with ScriptedServer(schema_answerer) as server:
        settings = LLMSettings(
            model="scripted",
            base_url=server.base_url,
            api_key="dry-run",
            cache=False,
            concurrency=args.workers,
        )
        print(
            f"dry run through {server.base_url}, {args.workers} workers, prompt budget 32K tokens"
        )
        header = f"{'strategy':<14} {'subset':<20} {'calls/trace':>11} {'prompt tok median':>17} {'p90':>8} {'max':>8} {'harness s':>10}"
        print(header)
        print("-" * len(header))
        for strategy in args.strategies.split(","):
            started = time.perf_counter()
            result = run_whowhen(
                [DATA], attributor=strategy, settings=settings, workers=args.workers
            )
            wall = time.perf_counter() - started
            failed = [s for s in result.scores if s.error and not s.error.startswith("no answer")]
            figures[strategy] = {
                "wall_seconds": round(wall, 2),
                "failed": len(failed),
                "groups": {},
            }
            for subset in ("Algorithm-Generated", "Hand-Crafted"):
                for bucket, _, _ in (("all", 0, 0), *BUCKETS):
                    scores = [
                        s
                        for s in result.scores
                        if s.subset == subset
                        and (bucket == "all" or bucket_of(s.n_steps) == bucket)
                    ]
                    if not scores:
                        continue
                    tokens = spread([float(s.input_tokens) for s in scores])
                    calls = spread([float(s.calls) for s in scores])
                    name = subset if bucket == "all" else f"{subset} {bucket}"
                    figures[strategy]["groups"][name] = {
                        "traces": len(scores),
                        "calls": calls,
                        "input_tokens": tokens,
                    }
                    if bucket == "all":
                        print(
                            f"{strategy:<14} {subset:<20} {calls['mean']:>11.1f} {tokens['median']:>17.0f} "
                            f"{tokens['p90']:>8.0f} {tokens['max']:>8.0f} {wall:>10.1f}"
                        )
            if failed:
                print(
                    f"  {len(failed)} trace(s) failed, first: {failed[0].trace}: {failed[0].error}"
                )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
