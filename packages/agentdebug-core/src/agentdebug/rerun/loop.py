"""The closed loop: diagnose → recover → gate → rerun → score, until a branch
passes or the round limit is reached.

Round 1 diagnoses the original run; each later round diagnoses the previous
branch (a branch is a full run: it carries the inherited prefix). Every report,
every branch and every decision stays in the store (see :mod:`.record`).

Rerun-verified root cause: a report whose blamed step, corrected alone, turned the
run into a success is marked ``verified_by_rerun``; one whose branch still failed
is marked ``not_confirmed``. That is the definition of a decisive error (the
earliest step whose correction alone makes the run succeed) made testable. A
rerun that could not run at all tests nothing and changes no verification.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from agentdebug.capture.auto import configured_attributor
from agentdebug.capture.debugger import AgentDebug
from agentdebug.detect.signals import CODE_FIX
from agentdebug.diagnose import blames_input
from agentdebug.errors import AgentDebugError
from agentdebug.llm import LLMError
from agentdebug.plugins import Registry, get_registry
from agentdebug.recover.base import RecoveryError
from agentdebug.recover.gate import Policy, decide, policy_name
from agentdebug.rerun.branch import started_branch
from agentdebug.rerun.executors import find_executor
from agentdebug.rerun.record import (
    ensure_stored,
    note_later_success,
    record_verification,
    save_attempt,
)
from agentdebug.rerun.score import make_scorer
from agentdebug.schema import (
    AgentTrajectory,
    Attempt,
    DiagnosticReport,
    LoopResult,
    OutcomeStatus,
    RecoveryPlan,
    RerunRequest,
)
from agentdebug.stages import Recoverer, RerunExecutor, Scorer
from agentdebug.store.history import is_joined, made_on

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
    ``scorer`` to the run's recorded outcome (the framework's success check) when
    it has one, else its reference answer. ``report`` (the run's existing
    diagnosis) skips round 1's diagnosis. ``diagnose_options`` go to
    :func:`agentdebug.diagnose.diagnose`. A run that continues another is read
    with the runs before it (:meth:`AgentDebug.history`), so the blamed step, and
    the branch's fork, may lie in one of them.
    """
    if max_rounds < 1:
        raise AgentDebugError(f"max_rounds must be at least 1, got {max_rounds}")
    reg = registry or get_registry()
    store = debugger.store
    if store is None:
        raise AgentDebugError("the closed loop keeps every branch in the store, and none is open")
    say = progress or (lambda _msg: None)
    rec = reg.recoverer(recoverer) if isinstance(recoverer, str) else recoverer
    judge = make_scorer(scorer)
    ensure_stored(store, trajectory)
    trajectory = debugger.history(trajectory)  # a continuing run: the cause may be before it
    if report is not None and not made_on(report, trajectory):
        read = report.metadata.get("history")
        how = f"with runs {', '.join(map(str, read))}" if read else "alone"
        say(
            f"report {report.id} was made on run {trajectory.id} read {how}; "
            "diagnosing it again as the loop reads it"
            + (" (with the runs it continues)" if is_joined(trajectory) else "")
        )
        report = None

    try:
        first = judge.score(trajectory, trajectory)
    except Exception as exc:
        why = f"the {judge.name} scorer cannot judge run '{trajectory.id}': {_why(exc)}"
        # a run that could not be rerun anyway says so first: a scorer set up for it
        # would only lead to that
        unable = _never_rerun(executor, trajectory, reg, judge.name)
        raise AgentDebugError(f"{unable}; and {why}" if unable else why) from exc
    if first.success:
        say(f"run {trajectory.id} already passes the {judge.name} scorer: {first.reason}")
        return LoopResult(
            original_id=trajectory.id,
            status="already_ok",
            final_run_id=trajectory.id,
            detail=first.reason,
        )
    # (after: a run that passes needs no executor, installed or not)
    ex = executor or find_executor(trajectory.framework, reg)

    attempts: list[Attempt] = []
    confirmed: bool | None = None  # what round 1's branch said of the blame
    first_report: DiagnosticReport | None = None  # the original's, which round 1 tested
    tried: list[tuple[int, RecoveryPlan]] = []  # each round's plan as its recoverer made it
    current, current_report = trajectory, report
    for round_ in range(1, max_rounds + 1):
        if current_report is None:
            current_report = debugger.diagnose(
                current, attributor=attributor or configured_attributor(), **diagnose_options
            )
        say(f"round {round_}: {current_report.summary}")
        root = current_report.root_cause
        if root is not None and blames_input(current, root):
            why = (
                f"the root cause is the input of run '{current.id}' (step {root.step_index}): "
                "a rerun from one of its steps would be given the same input; fix the input "
                "(or the schema that refuses it) and run it again"
            )
            attempt = Attempt(
                round=round_, run_id=current.id, report_id=current_report.id, error=why
            )
            return _end(store, current_report, attempts, attempt, trajectory, "no_plan", why)
        code = root.metadata.get(CODE_FIX) if root is not None else None
        if root is not None and code:
            why = (
                code  # (the rule's own words: why no rerun of this run helps)
                if isinstance(code, str)
                else f"the root cause is code that ran at step {root.step_index} "
                f"({root.agent_name or 'a tool'}): a rerun from its step would run the same "
                "code; change it as the fix says and run the agent again"
            )
            attempt = Attempt(
                round=round_, run_id=current.id, report_id=current_report.id, error=why
            )
            return _end(store, current_report, attempts, attempt, trajectory, "no_plan", why)
        plan, status, error = recover_plan(rec, current, current_report)
        if plan is None or plan.resume_step is None:
            why = error or f"recoverer '{rec.name}' named no step to rerun from"
            attempt = Attempt(
                round=round_, run_id=current.id, report_id=current_report.id, plan=plan, error=why
            )
            return _end(store, current_report, attempts, attempt, trajectory, status, why)
        made, plan = plan, _unrepeated(plan, tried, attempts)
        tried.append((round_, made))
        say(
            f"round {round_}: plan ({plan.strategy}) rerun from step {plan.resume_step}: "
            f"{plan.directive}"
        )
        attempt = Attempt(round=round_, run_id=current.id, report_id=current_report.id, plan=plan)
        unable = _cannot_rerun(ex, current, judge.name, plan.resume_step, plan.state_patch)
        if unable is not None:  # before the gate: no one approves what cannot run
            say(f"round {round_}: {unable}; the original run is kept")
            attempt = attempt.model_copy(update={"error": unable})
            return _end(store, current_report, attempts, attempt, trajectory, "error", unable)
        plan = _with_executor_notes(ex, current, plan)  # (the gate is shown them)
        attempt = attempt.model_copy(update={"plan": plan})
        decision = decide(plan, policy)
        verdict = "approved" if decision.approved else "refused"
        say(f"round {round_}: gate {decision.policy}: {verdict} ({decision.reason})")
        attempt = attempt.model_copy(update={"decision": decision})
        if not decision.approved:
            return _end(
                store, current_report, attempts, attempt, trajectory, "refused", decision.reason
            )
        _approved(rec, plan, current)

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
            why = f"the rerun by the '{getattr(ex, 'framework', '?')}' executor failed: {_why(exc)}"
            expected = isinstance(exc, AgentDebugError)  # a refusal that says why
            if progress is None or not expected:  # (else the caller is told just below)
                log.warning("agentdebug: %s", why, exc_info=not expected)
            say(f"round {round_}: {why}; the original run is kept")
            attempt = attempt.model_copy(
                update={"error": why, "branch_id": started_branch(request)}
            )
            return _end(store, current_report, attempts, attempt, trajectory, "error", why)
        except BaseException as exc:  # stopped: Ctrl-C, a cancel
            # the round is kept on the report, with the branch as far as it got (before,
            # neither the approval nor the branch was), and the stop goes on to the caller
            kept = started_branch(request)
            why = f"the rerun was stopped ({type(exc).__name__}) before it ended" + (
                f"; its branch {kept} is kept as far as it got" if kept else ""
            )
            say(f"round {round_}: {why}; the original run is kept")
            attempt = attempt.model_copy(update={"error": why, "branch_id": kept})
            try:  # (the stop goes on, even when the round cannot be kept)
                _end(store, current_report, attempts, attempt, trajectory, "error", why)
            except Exception:
                log.exception("agentdebug: the stopped round could not be kept on the report")
            raise
        started_branch(request)  # (forget it: the branch is in hand)

        branch = _linked(branch, request)
        ensure_stored(store, branch, replace=True)
        attempt = attempt.model_copy(update={"branch_id": branch.id})
        try:
            score = judge.score(branch, trajectory)
        except Exception as exc:
            why = f"scoring branch {branch.id} with the {judge.name} scorer failed: {_why(exc)}"
            ended = branch.outcome
            if ended.status is OutcomeStatus.UNKNOWN and ended.reason:
                why = (  # (no scorer's fault: a branch left waiting at an interrupt, say)
                    f"branch {branch.id} ended without a verdict, so the {judge.name} "
                    f"scorer could not judge it: {ended.reason}"
                )
            attempt = attempt.model_copy(update={"error": why})
            return _end(
                store, current_report, attempts, attempt, trajectory, "error", why, branch.id
            )
        attempt = attempt.model_copy(update={"score": score})
        attempts.append(attempt)
        said = record_verification(store, current_report, branch, request, score)
        if round_ == 1:
            confirmed = said.status == "verified_by_rerun"
            first_report = current_report
        elif score.success and first_report is not None:  # the original's report says so
            note_later_success(store, first_report, round_, branch.id, plan, current.id)
        save_attempt(store, current_report, attempt)
        outcome = "succeeded" if score.success else "failed"
        say(f"round {round_}: branch {branch.id} {outcome} ({score.scorer}: {score.reason})")
        if score.success and said.status != "verified_by_rerun":
            say(f"round {round_}: {said.detail}")
        if score.success:
            return _result(trajectory, "succeeded", attempts, branch.id, score.reason, confirmed)
        current, current_report = branch, None
    return _result(
        trajectory,
        "failed",
        attempts,
        current.id,
        f"no branch passed in {max_rounds} round(s)",
        confirmed,
    )


def _unrepeated(
    plan: RecoveryPlan, tried: list[tuple[int, RecoveryPlan]], attempts: list[Attempt]
) -> RecoveryPlan:
    """A plan an earlier round made too (same step, same directive), whose branch
    failed: the same words again would only repeat that branch (a deterministic
    recoverer such as ``native`` says the same of the same failure), so the
    directive adds that it was tried, in which rounds, and how it failed."""
    rounds = [
        r
        for r, before in tried
        if before.resume_step == plan.resume_step and before.directive == plan.directive
    ]
    if not rounds:
        return plan
    scored = [a.score for a in attempts if a.round in rounds and a.score is not None]
    how = " ".join((scored[-1].reason if scored else "").split()).rstrip(".")
    which = ", ".join(map(str, rounds))
    directive = (
        f"{plan.directive} This was already tried from this step (round {which}) and the "
        f"run still failed{': ' + how if how else ''}. Do not repeat that attempt: take a "
        "different approach."
    )
    note = (
        f"round {which} tried this very plan and failed: the loop added that to the "
        "directive (a model recoverer, reflexion or critic, writes a new one)"
    )
    return plan.model_copy(update={"directive": directive, "notes": [*plan.notes, note]})


def _never_rerun(
    executor: RerunExecutor | None, run: AgentTrajectory, reg: Registry, scorer: str
) -> str | None:
    """Why ``run`` cannot be rerun from any step, when that is known beforehand: no
    executor for its framework, or one whose ``preflight`` refuses it."""
    try:
        ex = executor or find_executor(run.framework, reg)
    except AgentDebugError as exc:
        return f"run '{run.id}' cannot be rerun: {exc}"
    unable = _cannot_rerun(ex, run, scorer, None)
    return f"run '{run.id}': {unable}" if unable else None


def _cannot_rerun(
    ex: RerunExecutor,
    run: AgentTrajectory,
    scorer: str,
    resume_step: int | None,
    state_patch: dict[str, Any] | None = None,
) -> str | None:
    """Why ``ex`` cannot rerun ``run`` from ``resume_step``, when its ``preflight``
    can tell beforehand. It is told what it takes of: the name of the scorer that
    will judge the branch (``scorer``: a branch no check of the executor's can judge
    is no use to the default scorer, and fine for the llm one), the step the plan
    reruns from (``resume_step``: a run may be restorable at some steps only), and,
    with a plan, the plan's state patch (``state_patch``, ``{}`` for none: a
    directive alone needs somewhere in the agent's state to go)."""
    check = getattr(ex, "preflight", None)
    if check is None:
        return None
    try:
        takes = set(inspect.signature(check).parameters)
    except (TypeError, ValueError):  # (a builtin, say)
        takes = set()
    told: dict[str, Any] = {}
    if "scorer" in takes:
        told["scorer"] = scorer
    if "resume_step" in takes and resume_step is not None:
        told["resume_step"] = resume_step
        if "state_patch" in takes:  # (a plan's: none is {})
            told["state_patch"] = dict(state_patch or {})
    try:
        check(run, **told)
    except AgentDebugError as exc:
        return f"the '{getattr(ex, 'framework', '?')}' executor cannot rerun it: {exc}"
    except Exception:  # a preflight's own bug: the rerun itself will say what is wrong
        log.exception("agentdebug: the executor's preflight failed")
    return None


def _with_executor_notes(
    ex: RerunExecutor, run: AgentTrajectory, plan: RecoveryPlan
) -> RecoveryPlan:
    """``plan`` with what its executor will do beside it that whoever approves it
    should know (its optional ``plan_notes``: answers a person gave the original
    run that the branch will be given again, say) added to its notes."""
    notes_of = getattr(ex, "plan_notes", None)
    if notes_of is None:
        return plan
    try:
        notes = [str(n) for n in notes_of(run, plan) or ()]
    except Exception:  # an executor's own bug: the plan goes to the gate as it is
        log.exception("agentdebug: the executor's plan notes failed")
        return plan
    fresh = [n for n in notes if n not in plan.notes]
    return plan.model_copy(update={"notes": [*plan.notes, *fresh]}) if fresh else plan


def _why(exc: BaseException) -> str:
    return (
        str(exc) if isinstance(exc, (AgentDebugError, LLMError)) else f"{type(exc).__name__}: {exc}"
    )


def recover_plan(
    rec: Recoverer, run: AgentTrajectory, report: DiagnosticReport
) -> tuple[RecoveryPlan | None, str, str | None]:
    """The plan, or why there is none: ``no_plan`` when the report gives nothing to
    act on, ``error`` when the recoverer failed."""
    try:
        return rec.recover(run, report), "no_plan", None
    except RecoveryError as exc:
        return None, "no_plan", str(exc)
    except LLMError as exc:  # (its model failed: one that needs none can still plan)
        also = "" if rec.name == "native" else "; the 'native' recoverer needs no model"
        return None, "error", f"recoverer '{rec.name}': {exc}{also}"
    except AgentDebugError as exc:
        return None, "error", str(exc)
    except Exception as exc:
        log.exception("recoverer %s failed", rec.name)
        return None, "error", f"recoverer '{rec.name}' failed: {type(exc).__name__}: {exc}"


def _approved(rec: Recoverer, plan: RecoveryPlan, run: AgentTrajectory) -> None:
    """Tell a recoverer its plan passed the gate (AutoManual keeps its rules then)."""
    hook = getattr(rec, "approved", None)
    if hook is None:
        return
    try:
        hook(plan, run)
    except Exception:
        log.exception("agentdebug: recoverer %s failed after its plan was approved", rec.name)


def _end(
    store: Any,
    report: DiagnosticReport,
    attempts: list[Attempt],
    attempt: Attempt,
    original: AgentTrajectory,
    status: str,
    detail: str,
    final: str | None = None,
) -> LoopResult:
    attempts.append(attempt)
    save_attempt(store, report, attempt)
    return _result(original, status, attempts, final or attempt.run_id, detail)


def _result(
    original: AgentTrajectory,
    status: Any,
    attempts: list[Attempt],
    final: str,
    detail: str,
    confirmed: bool | None = None,
) -> LoopResult:
    """``verified_by_rerun`` speaks of the original's root cause: what the first
    round's scored branch said (``confirmed``: its verification; a branch that
    passed with the blamed step deciding as before does not confirm it), None
    when no branch was scored."""
    first = attempts[0] if attempts else None
    verified = first.score.success if first is not None and first.score is not None else None
    if verified and confirmed is False:
        verified = False
        if len(attempts) == 1:
            detail += (
                " (but the blamed step decided as before: the directive changed a later "
                "step, so the root cause is not confirmed)"
            )
    elif status == "succeeded" and verified is False:
        detail += (
            " (a later round succeeded; the first branch, which corrected only the blamed "
            "step, did not, so the original root cause is not confirmed)"
        )
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
