"""The closed loop: diagnose → recover → gate → rerun → score, until a branch
passes or the round limit is reached.

Round 1 diagnoses the original run; each later round diagnoses the previous
branch (a branch is a full run: it carries the inherited prefix). Every report,
every branch and every decision stays in the store: branches as trajectories
linked to their parent, plans and gate decisions on the report of the run they
were made for, under ``metadata['recovery']``.

Rerun-verified root cause: a report whose blamed step, corrected alone, turned the
run into a success is marked ``verified_by_rerun``; one whose branch still failed
(or could not run) is marked ``not_confirmed``. That is the definition of a
decisive error (the earliest step whose correction alone makes the run succeed)
made testable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agentdebug.capture.auto import configured_attributor
from agentdebug.capture.session import AgentDebug
from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.llm import LLMError
from agentdebug.plugins import Registry, get_registry
from agentdebug.recover.gate import Policy, decide, policy_name
from agentdebug.rerun.executors import find_executor
from agentdebug.rerun.score import make_scorer
from agentdebug.schema import (
    AgentTrajectory,
    Attempt,
    DiagnosticReport,
    GateDecision,
    LoopResult,
    RecoveryPlan,
    RerunRequest,
    Score,
    Verification,
)
from agentdebug.stages import Recoverer, RerunExecutor, Scorer
from agentdebug.store import TraceStore

log = logging.getLogger("agentdebug.rerun")

Progress = Callable[[str], Any]


def closed_loop(
    trajectory: AgentTrajectory,
    *,
    debugger: AgentDebug,
    executor: RerunExecutor | None = None,
    recoverer: str | Recoverer = "native",
    policy: Policy = "auto",
    scorer: str | Scorer | Callable[[AgentTrajectory], Any] | None = None,
    max_rounds: int = 3,
    report: DiagnosticReport | None = None,
    attributor: str | None = None,
    registry: Registry | None = None,
    progress: Progress | None = None,
    **diagnose_options: Any,
) -> LoopResult:
    """Run the loop on a failed run; returns every round and how it ended.

    ``executor`` defaults to the installed one for the run's framework;
    ``scorer`` to the reference answer when the run has one, else the branch's
    outcome. ``report`` (the run's existing diagnosis) skips round 1's diagnosis.
    ``diagnose_options`` go to :func:`agentdebug.diagnose.diagnose`.
    """
    if max_rounds < 1:
        raise AgentDebugError(f"max_rounds must be at least 1, got {max_rounds}")
    reg = registry or get_registry()
    store = debugger.store
    if store is None:
        raise AgentDebugError("the closed loop keeps every branch in the store, and none is open")
    say = progress or (lambda _msg: None)
    rec = reg.recoverer(recoverer) if isinstance(recoverer, str) else recoverer
    judge = make_scorer(scorer, trajectory)
    ex = executor or find_executor(trajectory.framework, reg)
    _ensure_stored(store, trajectory)

    first = judge.score(trajectory, trajectory)
    if first.success:
        say(f"run {trajectory.id} already passes the {judge.name} scorer: {first.reason}")
        return LoopResult(
            original_id=trajectory.id,
            status="already_ok",
            final_run_id=trajectory.id,
            detail=first.reason,
        )

    attempts: list[Attempt] = []
    current, current_report = trajectory, report
    for round_ in range(1, max_rounds + 1):
        if current_report is None:
            current_report = debugger.diagnose(
                current, attributor=attributor or configured_attributor(), **diagnose_options
            )
        say(f"round {round_}: {current_report.summary}")
        plan, error = _recover(rec, current, current_report)
        if plan is None:
            attempts.append(
                Attempt(round=round_, run_id=current.id, report_id=current_report.id, error=error)
            )
            save_attempt(store, current_report, attempts[-1])
            status = "no_plan" if "names no root-cause step" in (error or "") else "error"
            return _result(trajectory, status, attempts, current.id, error or "")
        assert plan.resume_step is not None  # recoverers always set it
        say(
            f"round {round_}: plan ({plan.strategy}) rerun from step {plan.resume_step}: {plan.directive}"
        )
        decision = decide(plan, policy)
        say(
            f"round {round_}: gate {decision.policy}: {'approved' if decision.approved else 'refused'} ({decision.reason})"
        )
        if not decision.approved:
            attempts.append(_attempt(round_, current, current_report, plan, decision))
            save_attempt(store, current_report, attempts[-1])
            return _result(trajectory, "refused", attempts, current.id, decision.reason)

        request = RerunRequest(
            trajectory=current,
            resume_step=plan.resume_step,
            directive=plan.directive,
            policy=policy_name(policy),
            decision=decision,
            plan=plan,
            report_id=current_report.id,
            state_patch=plan.state_patch,
            attempt=round_,
            store=store.location,
        )
        try:
            branch = ex.rerun(request)
        except Exception as exc:
            why = f"rerun by the '{getattr(ex, 'framework', '?')}' executor failed: {type(exc).__name__}: {exc}"
            log.warning("agentdebug: %s", why, exc_info=not isinstance(exc, AgentDebugError))
            attempts.append(_attempt(round_, current, current_report, plan, decision, error=why))
            _verify(store, current_report, None, request, None, why)
            save_attempt(store, current_report, attempts[-1])
            say(f"round {round_}: {why}; the original run is kept")
            return _result(trajectory, "error", attempts, current.id, why)

        branch = _linked(branch, request)
        _ensure_stored(store, branch, replace=True)
        try:
            score = judge.score(branch, trajectory)
        except (AgentDebugError, LLMError) as exc:
            why = f"scoring branch {branch.id} failed: {exc}"
            attempts.append(
                _attempt(round_, current, current_report, plan, decision, branch=branch, error=why)
            )
            save_attempt(store, current_report, attempts[-1])
            return _result(trajectory, "error", attempts, branch.id, why)
        attempts.append(
            _attempt(round_, current, current_report, plan, decision, branch=branch, score=score)
        )
        _verify(store, current_report, branch, request, score, score.reason)
        save_attempt(store, current_report, attempts[-1])
        say(
            f"round {round_}: branch {branch.id} {'succeeded' if score.success else 'failed'} "
            f"({judge.name}: {score.reason})"
        )
        if score.success:
            return _result(trajectory, "succeeded", attempts, branch.id, score.reason)
        current, current_report = branch, None
    return _result(
        trajectory, "failed", attempts, current.id, f"no branch passed in {max_rounds} round(s)"
    )


def _recover(
    rec: Recoverer, run: AgentTrajectory, report: DiagnosticReport
) -> tuple[RecoveryPlan | None, str | None]:
    try:
        return rec.recover(run, report), None
    except (AgentDebugError, LLMError) as exc:
        return None, f"recoverer '{rec.name}': {exc}"
    except Exception as exc:
        log.exception("recoverer %s failed", rec.name)
        return None, f"recoverer '{rec.name}' failed: {type(exc).__name__}: {exc}"


def _attempt(
    round_: int,
    run: AgentTrajectory,
    report: DiagnosticReport,
    plan: RecoveryPlan,
    decision: GateDecision,
    *,
    branch: AgentTrajectory | None = None,
    score: Score | None = None,
    error: str | None = None,
) -> Attempt:
    return Attempt(
        round=round_,
        run_id=run.id,
        report_id=report.id,
        plan=plan,
        decision=decision,
        branch_id=branch.id if branch else None,
        score=score,
        error=error,
    )


def _result(
    original: AgentTrajectory, status: Any, attempts: list[Attempt], final: str, detail: str
) -> LoopResult:
    first = attempts[0] if attempts else None
    verified = None
    if first is not None and first.branch_id is not None and first.score is not None:
        verified = first.score.success
    elif first is not None and first.decision is not None and first.decision.approved:
        verified = False  # the rerun itself failed
    return LoopResult(
        original_id=original.id,
        status=status,
        attempts=attempts,
        final_run_id=final,
        verified_by_rerun=verified,
        detail=detail,
    )


def _linked(branch: AgentTrajectory, request: RerunRequest) -> AgentTrajectory:
    """The branch as the loop keeps it: linked to the run it forked, whatever the
    executor remembered to set."""
    update: dict[str, Any] = {}
    if branch.parent_id != request.trajectory.id:
        log.warning(
            "agentdebug: branch %s did not name its parent; linked to %s",
            branch.id,
            request.trajectory.id,
        )
        update["parent_id"] = request.trajectory.id
    if not isinstance(branch.metadata.get("branch"), dict):
        update["metadata"] = {**branch.metadata, "branch": request.branch_metadata()}
    if branch.branch_from_event_id is None and request.resume_event is not None:
        update["branch_from_event_id"] = request.resume_event.id
    return branch.model_copy(update=update) if update else branch


def _ensure_stored(store: TraceStore, run: AgentTrajectory, *, replace: bool = False) -> None:
    try:
        stored = store.load_trajectory(run.id)
    except NotFoundError:
        store.save_trajectory(run)
        return
    if replace and (
        stored.parent_id != run.parent_id
        or stored.metadata != run.metadata
        or len(stored.events) != len(run.events)
    ):
        store.save_trajectory(run)


def _verify(
    store: TraceStore,
    report: DiagnosticReport,
    branch: AgentTrajectory | None,
    request: RerunRequest,
    score: Score | None,
    detail: str,
) -> None:
    ok = score is not None and score.success
    verification = Verification(
        status="verified_by_rerun" if ok else "not_confirmed",
        branch_id=branch.id if branch else None,
        resume_step=request.resume_step,
        directive=request.directive,
        score=score.score if score else None,
        detail=detail,
    )
    _resave(store, report, {"verified_by_rerun": ok, "verification": verification})


def save_attempt(store: TraceStore, report: DiagnosticReport, attempt: Attempt) -> None:
    """Keep a round (plan, gate decision, branch, score) on the report it acted on."""
    latest = _latest(store, report)
    done = list(latest.metadata.get("recovery", []))
    done.append(attempt.model_dump(mode="json"))
    _resave(store, latest, {"metadata": {**latest.metadata, "recovery": done}})


def _latest(store: TraceStore, report: DiagnosticReport) -> DiagnosticReport:
    for stored in store.load_reports(report.trajectory_id):
        if stored.id == report.id:
            return stored
    return report


def _resave(store: TraceStore, report: DiagnosticReport, update: dict[str, Any]) -> None:
    latest = _latest(store, report)
    try:
        store.save_report(latest.model_copy(update=update))
    except AgentDebugError as exc:
        log.error("agentdebug: report %s not updated: %s", report.id, exc)
