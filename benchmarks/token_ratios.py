#!/usr/bin/env python3
"""Tokens per trace of DeepDebug and error-lifecycle attribution, relative to one
all-at-once pass, dry-run through the local server on all of ../shared/data.

    python3 dev.py python benchmarks/token_ratios.py [--json FILE]

Every trace (155 Who&When, 72 TRAIL) is diagnosed three times through the real
client and real HTTP: all-at-once, deepdebug, lifecycle. The server reports usage
with agentdebug's token counter. Its answers are chosen to make each strategy do
its most expensive work, so the ratios are upper bounds:
- DeepDebug: the global read names a middle step and the last step as the visible
  failure; the probe names a different step; so every trace goes through the
  cross-examination (single-agent runs also bisect to the region).
- Lifecycle: every window reports one trigger (quoted from the window's first
  full step, against the goal, so it grounds) and every open error as relied on,
  so every instance stays active and the final comparison call always happens.
Ratios: per group, the sum of the strategy's prompt tokens over the sum of the
all-at-once prompt tokens, and the median of the per-trace ratios.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentdebug.bench.metrics import bucket_of
from agentdebug.diagnose import diagnose
from agentdebug.io import TrailImporter, WhoWhenImporter, import_paths
from agentdebug.llm import LLMSettings
from agentdebug.llm.testing import Reply, ScriptedServer, schema_answerer
from agentdebug.schema import AgentTrajectory

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STRATEGIES = ("all-at-once", "deepdebug", "lifecycle")


def _schema(request: dict[str, Any]) -> dict[str, Any]:
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    return dict(fmt.get("schema") or {})


def _enum(schema: dict[str, Any], name: str) -> list[Any]:
    prop = schema.get("properties", {}).get(name, {})
    for option in [prop, *prop.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
        if "const" in option:
            return [option["const"]]
    return []


def worst_case(request: dict[str, Any]) -> Reply:
    text = "\n".join(str(m.get("content", "")) for m in request["messages"] if m["role"] == "user")
    base = json.loads(schema_answerer(request).content or "{}")
    schema = _schema(request)
    if "reconstruct what happened" in text:  # DeepDebug global read
        steps = _enum(schema, "step")
        base.update(step=steps[len(steps) // 2], failure_step=steps[-1])
    elif "chain of handoffs" in text or "is believed to lie in steps" in text:  # DeepDebug probes
        steps = _enum(schema, "step")
        base.update(
            step=steps[0] if steps[0] != steps[len(steps) // 2] or len(steps) < 2 else steps[1]
        )
    elif "Two readings of this failed run" in text:
        base.update(choice="A")
    elif "tracking the errors" in text:  # lifecycle window
        base = _lifecycle_window(text, request)
    return Reply(json.dumps(base))


def _lifecycle_window(text: str, request: dict[str, Any]) -> dict[str, Any]:
    schema = _schema(request)
    window = re.search(r"Steps\s+(\d+) to (\d+) are shown", text)
    goal = re.search(r"^GOAL: (.{12,60})", text, re.M)
    open_ids = re.findall(r"^- (E\d+) \(from step", text, re.M)
    out: dict[str, Any] = {"triggers": [], "updates": []}
    if window is None or goal is None:
        return out
    lo, hi = int(window.group(1)), int(window.group(2))
    defs = schema.get("$defs", {})
    trigger_def = next((d for n, d in defs.items() if n.startswith("Trigger")), {})
    steps = [s for s in _enum(trigger_def, "step") if lo <= s <= hi]
    for step in steps:
        body = re.search(
            rf"^\[step {step} ·[^\n]*\n(?:[^\n]*: ?\n)?\s*(\S[^\n]{{20,}})", text, re.M
        )
        if body is None:
            continue
        out["triggers"].append(
            {
                "step": step,
                "conflict": "task",
                "phase": "act",
                "object": f"object of step {step}",
                "continues": None,
                "wrong_quote": body.group(1)[:40],
                "reference_quote": goal.group(1)[:30],
                "description": "dry-run trigger",
            }
        )
        for error in open_ids:
            out["updates"].append(
                {"error": error, "step": step, "status": "relied_on", "quote": ""}
            )
        break
    out["updates"] = out["updates"][:12]
    return out


def run(
    trajectories: list[tuple[str, int, AgentTrajectory]],
    settings: LLMSettings,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    rows = []
    for n, (group, n_steps, trajectory) in enumerate(trajectories):
        row: dict[str, Any] = {"group": group, "bucket": bucket_of(n_steps), "trace": trajectory.id}
        for strategy in STRATEGIES:
            report = diagnose(trajectory, attributor=strategy, settings=settings, no_fallback=True)
            failed = [n for n in report.notes if "failed" in n]
            if failed:
                raise SystemExit(f"{trajectory.id} {strategy}: {failed[0]}")
            row[strategy] = {"tokens": report.cost.input_tokens, "calls": report.cost.calls}
        rows.append(row)
        if n % 25 == 0:
            log(f"  {n}/{len(trajectories)}")
    return rows


def summarize(
    rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    out = {}
    for name, members in groups.items():
        base = sum(r["all-at-once"]["tokens"] for r in members)
        entry: dict[str, Any] = {
            "traces": len(members),
            "all-at-once tokens/trace": base / len(members),
        }
        for strategy in STRATEGIES[1:]:
            total = sum(r[strategy]["tokens"] for r in members)
            entry[strategy] = {
                "ratio_of_sums": round(total / base, 3),
                "median_ratio": round(
                    statistics.median(
                        r[strategy]["tokens"] / r["all-at-once"]["tokens"] for r in members
                    ),
                    3,
                ),
                "calls_per_trace": round(
                    sum(r[strategy]["calls"] for r in members) / len(members), 2
                ),
            }
        out[name] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    trajectories: list[tuple[str, int, AgentTrajectory]] = []
    for run_ in import_paths([DATA / "whowhen"], importers=[WhoWhenImporter()]).runs:
        t = run_.trajectory
        trajectories.append(
            (f"Who&When {t.metadata['subset']}", len({e.step_index for e in t.events}), t)
        )
    for run_ in import_paths(
        [DATA / "trail" / "gaia" / "traces"], importers=[TrailImporter()]
    ).runs:
        t = run_.trajectory
        trajectories.append(("TRAIL", len({e.step_index for e in t.events}), t))
    with ScriptedServer(worst_case) as server:
        settings = LLMSettings(
            model="scripted", base_url=server.base_url, api_key="dry", cache=False, max_retries=0
        )
        rows = run(trajectories, settings, print)
    by_group = summarize(rows, lambda r: r["group"])
    by_bucket = summarize(rows, lambda r: f"{r['group']} {r['bucket']}")
    print(
        f"{'group':<40} {'traces':>6} {'1-pass tok':>10} {'deepdebug':>10} {'(median)':>9} {'calls':>6} {'lifecycle':>10} {'(median)':>9} {'calls':>6}"
    )
    for name, e in [*by_group.items(), *sorted(by_bucket.items())]:
        d, lc = e["deepdebug"], e["lifecycle"]
        print(
            f"{name:<40} {e['traces']:>6} {e['all-at-once tokens/trace']:>10.0f} {d['ratio_of_sums']:>9.2f}x {d['median_ratio']:>8.2f}x "
            f"{d['calls_per_trace']:>6.1f} {lc['ratio_of_sums']:>9.2f}x {lc['median_ratio']:>8.2f}x {lc['calls_per_trace']:>6.1f}"
        )
    hc_long = [
        r for r in rows if r["group"] == "Who&When Hand-Crafted" and r["bucket"] in ("31-60", ">60")
    ]
    if hc_long:
        ratio = sum(r["lifecycle"]["tokens"] for r in hc_long) / sum(
            r["all-at-once"]["tokens"] for r in hc_long
        )
        print(
            f"lifecycle on Hand-Crafted traces longer than 30 steps: {ratio:.2f}x one pass ({len(hc_long)} traces)"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"by_group": by_group, "by_bucket": by_bucket, "traces": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
