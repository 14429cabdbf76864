"""The Who&When harness: which agent and which step, scored exactly.

Each trace is imported with its gold label kept apart; the strategy sees only the
trajectory (with the task's reference answer removed unless ``with_reference``,
the two settings of the Who&When protocol). A strategy that fails on a trace, or
names no step, is counted wrong, never skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdebug.audit import audit_scope
from agentdebug.bench.metrics import BenchStopped, TraceScore, grouped
from agentdebug.errors import AgentDebugError, InputError
from agentdebug.llm import Budget, LLMCallFailed, LLMSettings
from agentdebug.schema import AgentTrajectory, Cost, GoldLabel
from agentdebug.stages import ImportedRun

Progress = Callable[[TraceScore], None]


@dataclass
class BenchResult:
    benchmark: str
    config: dict[str, Any]
    scores: list[TraceScore]
    seconds: float
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def groups(self) -> dict[str, dict[str, Any]]:
        return grouped(self.scores)

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "config": self.config,
            "wall_seconds": round(self.seconds, 2),
            "summary": self.groups,
            "unreadable_files": [{"file": f, "error": e} for f, e in self.failures],
            "traces": [s.as_dict() for s in self.scores],
        }


def load_whowhen(paths: Sequence[str | Path]) -> tuple[list[ImportedRun], list[tuple[str, str]]]:
    from agentdebug.io import WhoWhenImporter, import_paths

    batch = import_paths(paths, importers=[WhoWhenImporter()])
    failures = [(str(p), why) for p, why in batch.failures]
    if not batch.runs and not failures:
        raise InputError("no Who&When files found", source=", ".join(str(p) for p in paths))
    return batch.runs, failures


def prepare(trajectory: AgentTrajectory, *, with_reference: bool) -> AgentTrajectory:
    """The trajectory as the strategy may see it in the chosen setting."""
    if with_reference:
        return trajectory
    return trajectory.model_copy(update={"reference_answer": None})


def score_run(
    run: ImportedRun,
    attribute: Callable[[AgentTrajectory], tuple[str | None, int | None, float | None, Any]],
    *,
    with_reference: bool,
) -> TraceScore:
    traj = run.trajectory
    label = run.label or GoldLabel(source="whowhen")
    history_len = max((e.step_index for e in traj.events), default=-1) + 1
    subset = str(traj.metadata.get("subset", "unknown"))
    score = TraceScore(
        trace=f"{subset}/{traj.metadata.get('source_file', traj.id)}",
        subset=subset,
        n_steps=history_len,
        gold_agent=label.agent_name,
        gold_step=label.step_index,
    )
    started = time.perf_counter()
    with audit_scope() as log:
        try:
            agent, step, confidence, report = attribute(
                prepare(traj, with_reference=with_reference)
            )
            score.pred_agent, score.pred_step, score.confidence = agent, step, confidence
            score.notes = [n for n in report.notes if not n.startswith("free tier")]
            if agent is None and step is None:
                score.error = "no answer" + (f": {'; '.join(score.notes)}" if score.notes else "")
        except LLMCallFailed as exc:
            if exc.fatal:
                raise BenchStopped(score.trace, exc) from None
            score.error = str(exc)
        except AgentDebugError as exc:
            score.error = str(exc)
        except Exception as exc:  # a strategy's bug is a wrong answer, and is reported
            score.error = f"{type(exc).__name__}: {exc}"
    # Counted from the audit trail, so calls made before a failure count too.
    cost = Cost.of(log.entries)
    score.calls, score.cached_calls = cost.calls, cost.cached_calls
    score.input_tokens = cost.input_tokens + cost.cached_input_tokens
    score.output_tokens = cost.output_tokens + cost.cached_output_tokens
    score.seconds = time.perf_counter() - started
    return score


def diagnosis_attributor(
    attributor: str,
    *,
    with_reference: bool,
    settings: LLMSettings | None = None,
    budget: Budget | None = None,
) -> Callable[[AgentTrajectory], tuple[str | None, int | None, float | None, Any]]:
    """Attribution through the full diagnosis pipeline, as a user would get it, but
    with no fallback: a strategy that cannot answer is scored as not answering,
    never credited with the heuristic's answer."""
    from agentdebug.diagnose import diagnose

    def attribute(traj: AgentTrajectory) -> tuple[str | None, int | None, float | None, Any]:
        report = diagnose(
            traj,
            attributor=attributor,
            settings=settings,
            budget=budget,
            with_reference=with_reference,
            no_fallback=True,
        )
        root = report.root_cause
        if root is None:
            return None, None, None, report
        return root.agent_name, root.step_index, root.confidence, report

    return attribute


def run_whowhen(
    paths: Sequence[str | Path],
    *,
    attributor: str = "heuristic",
    with_reference: bool = False,
    workers: int = 1,
    progress: Progress | None = None,
    settings: LLMSettings | None = None,
    budget: Budget | None = None,
    extra_config: dict[str, Any] | None = None,
) -> BenchResult:
    runs, failures = load_whowhen(paths)
    attribute = diagnosis_attributor(
        attributor, with_reference=with_reference, settings=settings, budget=budget
    )
    started = time.perf_counter()

    def one(run: ImportedRun) -> TraceScore:
        score = score_run(run, attribute, with_reference=with_reference)
        if progress is not None:
            progress(score)
        return score

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            scores = list(pool.map(one, runs))
    else:
        scores = [one(r) for r in runs]
    config = {
        "attributor": attributor,
        "with_reference": with_reference,
        "paths": [str(p) for p in paths],
        "workers": workers,
        "model": settings.model if settings is not None else None,
        "budget": str(budget) if budget is not None else None,
        **(extra_config or {}),
    }
    return BenchResult("whowhen", config, scores, time.perf_counter() - started, failures)
