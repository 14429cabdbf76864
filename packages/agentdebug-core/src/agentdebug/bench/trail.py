"""The TRAIL harness: error locations (span ids) and categories, per trace.

TRAIL annotates every error in a trace with a span id and a category. A strategy's
predictions are its findings and its top hypothesis: each names an event (a span)
and a failure mode, which the crosswalk turns into TRAIL categories. Metrics:

- location recall: per trace, the share of annotated error spans that some
  prediction names; averaged over traces with at least one annotation;
- location + category: the same for (span, category) pairs;
- category F1: per trace, the set of predicted categories against the set of
  annotated ones; true/false positives and negatives summed per category over all
  traces, then F1 per category, averaged weighted by annotation support (TRAIL's
  headline figure) and unweighted (macro).

Category spellings in the annotations are normalised to TRAIL's own list first.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdebug.audit import audit_scope
from agentdebug.bench.metrics import BenchStopped
from agentdebug.errors import AgentDebugError, InputError
from agentdebug.llm import Budget, LLMCallFailed, LLMSettings
from agentdebug.plugins import get_registry
from agentdebug.schema import AgentTrajectory, Cost, DiagnosticReport, GoldLabel
from agentdebug.taxonomy import normalize_trail_category

Progress = Callable[["TrailScore"], None]


@dataclass
class TrailScore:
    trace: str
    gold: list[tuple[str, str]]  # (span id, category)
    predicted: list[tuple[str, str]] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def location_recall(self) -> float:
        gold = {loc for loc, _ in self.gold}
        hit = gold & {loc for loc, _ in self.predicted}
        return len(hit) / len(gold) if gold else float("nan")

    @property
    def joint_recall(self) -> float:
        gold = set(self.gold)
        return len(gold & set(self.predicted)) / len(gold) if gold else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "gold": [list(g) for g in self.gold],
            "predicted": [list(p) for p in self.predicted],
            "location_recall": self.location_recall,
            "joint_recall": self.joint_recall,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": round(self.seconds, 4),
            "error": self.error,
        }


def find_pairs(root: Path) -> list[tuple[Path, Path]]:
    """(trace file, annotation file) pairs under a TRAIL folder."""
    candidates = [root, root / "gaia", root.parent]
    for base in candidates:
        traces, notes = base / "traces", base / "annotations"
        if traces.is_dir() and notes.is_dir():
            return [(t, notes / t.name) for t in sorted(traces.glob("*.json"))]
    raise InputError(
        "expected a TRAIL folder holding traces/ and annotations/ (or its gaia/ subfolder)",
        source=str(root),
    )


def predictions(report: DiagnosticReport) -> list[tuple[str, str]]:
    """(event id, TRAIL category) pairs a report claims."""
    modes = get_registry().failure_modes
    out: list[tuple[str, str]] = []
    claims: list[tuple[str | None, str | None]] = [(f.event_id, f.mode_id) for f in report.findings]
    if report.root_cause is not None:
        claims.append((report.root_cause.event_id, report.root_cause.mode_id))
    for event_id, mode_id in claims:
        if not event_id:
            continue
        mode = modes.get(mode_id or "")
        categories = mode.crosswalk.trail if mode else []
        for category in categories[:1]:
            pair = (event_id, normalize_trail_category(category))
            if pair not in out:
                out.append(pair)
        if not categories:
            out.append((event_id, "(unmapped)"))
    return out


def category_f1(scores: Sequence[TrailScore]) -> dict[str, Any]:
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    support: Counter[str] = Counter()
    for s in scores:
        gold = {c for _, c in s.gold}
        pred = {c for _, c in s.predicted if c != "(unmapped)"}
        for c in gold:
            support[c] += 1
        for c in gold & pred:
            tp[c] += 1
        for c in pred - gold:
            fp[c] += 1
        for c in gold - pred:
            fn[c] += 1
    per: dict[str, float] = {}
    for c in set(tp) | set(fp) | set(fn):
        denom = 2 * tp[c] + fp[c] + fn[c]
        per[c] = 2 * tp[c] / denom if denom else 0.0
    total = sum(support.values())
    weighted = sum(per.get(c, 0.0) * n for c, n in support.items()) / total if total else 0.0
    macro = sum(per.values()) / len(per) if per else 0.0
    return {
        "weighted_f1": round(100 * weighted, 1),
        "macro_f1": round(100 * macro, 1),
        "per_category": {c: round(100 * v, 1) for c, v in sorted(per.items())},
    }


def summarize_trail(scores: Sequence[TrailScore]) -> dict[str, Any]:
    with_gold = [s for s in scores if s.gold]

    def mean(values: list[float]) -> float:
        return round(100 * sum(values) / len(values), 1) if values else float("nan")

    return {
        "traces": len(scores),
        "annotated_errors": sum(len(s.gold) for s in scores),
        "failed": sum(s.error is not None for s in scores),
        "location_recall": mean([s.location_recall for s in with_gold]),
        "location_category_recall": mean([s.joint_recall for s in with_gold]),
        "predictions_per_trace": round(
            sum(len(s.predicted) for s in scores) / max(1, len(scores)), 1
        ),
        "category": category_f1(scores),
        "calls_per_trace": round(sum(s.calls for s in scores) / max(1, len(scores)), 2),
        "input_tokens_per_trace": round(
            sum(s.input_tokens for s in scores) / max(1, len(scores)), 1
        ),
    }


@dataclass
class TrailResult:
    config: dict[str, Any]
    scores: list[TrailScore]
    seconds: float
    failures: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": "trail",
            "config": self.config,
            "wall_seconds": round(self.seconds, 2),
            "summary": summarize_trail(self.scores),
            "unreadable_files": [{"file": f, "error": e} for f, e in self.failures],
            "traces": [s.as_dict() for s in self.scores],
        }


def run_trail(
    root: str | Path,
    *,
    attributor: str = "heuristic",
    judge: bool = False,
    settings: LLMSettings | None = None,
    budget: Budget | None = None,
    progress: Progress | None = None,
    extra_config: dict[str, Any] | None = None,
) -> TrailResult:
    from agentdebug.diagnose import diagnose
    from agentdebug.io import TrailImporter, import_file, load_trail_annotations

    started = time.perf_counter()
    scores: list[TrailScore] = []
    failures: list[tuple[str, str]] = []
    for trace_path, note_path in find_pairs(Path(root)):
        try:
            label: GoldLabel = load_trail_annotations(note_path)
            (run,) = import_file(trace_path, importers=[TrailImporter()])
        except (AgentDebugError, ValueError) as exc:
            failures.append((str(trace_path), str(exc)))
            continue
        trajectory: AgentTrajectory = run.trajectory
        gold = [(str(e["location"]), str(e["category"])) for e in label.errors if e.get("location")]
        score = TrailScore(trace=trace_path.stem, gold=gold)
        t0 = time.perf_counter()
        with audit_scope() as log:
            try:
                report = diagnose(
                    trajectory,
                    attributor=attributor,
                    judge=judge,
                    settings=settings,
                    budget=budget,
                    no_fallback=True,
                )
                score.predicted = predictions(report)
            except LLMCallFailed as exc:
                if exc.fatal:
                    raise BenchStopped(score.trace, exc) from None
                score.error = str(exc)
            except AgentDebugError as exc:
                score.error = str(exc)
            except Exception as exc:
                score.error = f"{type(exc).__name__}: {exc}"
        cost = Cost.of(log.entries)
        score.calls = cost.calls + cost.cached_calls
        score.input_tokens = cost.input_tokens + cost.cached_input_tokens
        score.output_tokens = cost.output_tokens + cost.cached_output_tokens
        score.seconds = time.perf_counter() - t0
        scores.append(score)
        if progress is not None:
            progress(score)
    config = {
        "attributor": attributor,
        "judge": judge,
        "path": str(root),
        "model": settings.model if settings is not None else None,
        **(extra_config or {}),
    }
    return TrailResult(config, scores, time.perf_counter() - started, failures)
