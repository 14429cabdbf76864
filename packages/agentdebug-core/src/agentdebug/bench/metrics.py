"""Scoring: exact comparisons, per-group accuracy, cost statistics.

Steps are compared as integers (the benchmark's own scorer matches substrings, so
gold step "1" would match a prediction "12"); ±1 is reported separately. Agent
names are compared after normalisation (``Orchestrator (thought)`` is
``Orchestrator``; case and separators do not matter).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdebug.errors import AgentDebugError
from agentdebug.llm.errors import LLMCallFailed

_ROLE_SUFFIX = re.compile(r"\s*\((?:thought|->[^)]*|termination condition)\)\s*$", re.I)

BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("<=10", 0, 10),
    ("11-30", 11, 30),
    ("31-60", 31, 60),
    (">60", 61, 10**9),
)


def normalize_agent(name: str | None) -> str:
    if not name:
        return ""
    base = _ROLE_SUFFIX.sub("", name.strip())
    return re.sub(r"[^a-z0-9]", "", base.lower())


def bucket_of(n_steps: int) -> str:
    for label, low, high in BUCKETS:
        if low <= n_steps <= high:
            return label
    return BUCKETS[-1][0]


class BenchStopped(AgentDebugError):
    """The model endpoint refused the configuration (401, 403, 404): every other
    trace would fail the same way, so the benchmark stops instead of scoring a
    table of zeros."""

    def __init__(self, trace: str, error: LLMCallFailed) -> None:
        self.trace = trace
        self.error = error
        super().__init__(f"benchmark stopped at trace {trace}: {error}")


@dataclass
class TraceScore:
    """One trace's prediction against its gold label.

    ``calls`` are requests that reached a server; ``cached_calls`` were replayed
    from the response cache. Tokens count both (they measure what the strategy
    asks of a model, which is what a fresh run pays), with the server's usage.
    """

    trace: str
    subset: str
    n_steps: int
    gold_agent: str | None
    gold_step: int | None
    pred_agent: str | None = None
    pred_step: int | None = None
    confidence: float | None = None
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return self.error is None and (self.pred_agent is not None or self.pred_step is not None)

    @property
    def agent_ok(self) -> bool:
        return self.answered and normalize_agent(self.pred_agent) == normalize_agent(
            self.gold_agent
        )

    @property
    def step_ok(self) -> bool:
        return self.answered and self.pred_step is not None and self.pred_step == self.gold_step

    @property
    def step_near(self) -> bool:
        return (
            self.answered
            and self.pred_step is not None
            and self.gold_step is not None
            and abs(self.pred_step - self.gold_step) <= 1
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "subset": self.subset,
            "n_steps": self.n_steps,
            "bucket": bucket_of(self.n_steps),
            "gold_agent": self.gold_agent,
            "gold_step": self.gold_step,
            "pred_agent": self.pred_agent,
            "pred_step": self.pred_step,
            "confidence": self.confidence,
            "agent_ok": self.agent_ok,
            "step_ok": self.step_ok,
            "step_within_1": self.step_near,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": round(self.seconds, 4),
            "error": self.error,
            "notes": self.notes,
        }


def pct(values: Iterable[bool]) -> float:
    items = list(values)
    return round(100.0 * sum(items) / len(items), 1) if items else float("nan")


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (q in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "max": 0.0}
    return {
        "mean": round(statistics.fmean(values), 1),
        "median": round(statistics.median(values), 1),
        "p90": round(quantile(values, 0.9), 1),
        "max": round(max(values), 1),
    }


def summarize(scores: Sequence[TraceScore]) -> dict[str, Any]:
    """Accuracy and cost over a group of traces; unanswered traces count as wrong."""
    return {
        "traces": len(scores),
        "answered": sum(s.answered for s in scores),
        "agent": pct(s.agent_ok for s in scores),
        "step": pct(s.step_ok for s in scores),
        "step_within_1": pct(s.step_near for s in scores),
        "agent_and_step": pct(s.agent_ok and s.step_ok for s in scores),
        "agent_and_step_within_1": pct(s.agent_ok and s.step_near for s in scores),
        "calls_per_trace": spread([float(s.calls) for s in scores]),
        "cached_calls_per_trace": spread([float(s.cached_calls) for s in scores]),
        "input_tokens_per_trace": spread([float(s.input_tokens) for s in scores]),
        "output_tokens_per_trace": spread([float(s.output_tokens) for s in scores]),
        "seconds_per_trace": spread([s.seconds for s in scores]),
    }


def grouped(scores: Sequence[TraceScore]) -> dict[str, dict[str, Any]]:
    """Summaries overall, per subset and per trace-length bucket."""
    out: dict[str, dict[str, Any]] = {"all": summarize(scores)}
    for subset in sorted({s.subset for s in scores}):
        out[subset] = summarize([s for s in scores if s.subset == subset])
    for subset in sorted({s.subset for s in scores}):
        for label, _, _ in BUCKETS:
            group = [s for s in scores if s.subset == subset and bucket_of(s.n_steps) == label]
            if group:
                out[f"{subset} {label}"] = summarize(group)
    return out
