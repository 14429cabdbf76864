"""The diagnosis pipeline: detectors, then an attributor, then one report.

Each detector and the attributor run inside their own guard: a strategy that
raises is named in the report's notes and audit trail, and the rest goes on.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence

from agentdebug.attribute.heuristic import DEFAULT_GUESS
from agentdebug.audit import FREE_TIER_INSTEAD, HEURISTIC_INSTEAD, audit_scope, note
from agentdebug.audit import record as record_audit
from agentdebug.detect.signals import BY_THE_RUN
from agentdebug.errors import AgentDebugError, ConfigError
from agentdebug.evidence import Grounder, ground_findings, ground_hypotheses
from agentdebug.guard import attributable, hypotheses_of, plugin_notes, run_detectors
from agentdebug.guard import audit_entry as _audit
from agentdebug.llm import (
    Budget,
    LLMError,
    LLMSettings,
    NoModelConfigured,
    budget_scope,
    current_settings,
    use_settings,
)
from agentdebug.plugins import Registry, get_registry
from agentdebug.remedies import fix_of
from agentdebug.schema import (
    AgentTrajectory,
    AuditEntry,
    Cost,
    DiagnosticReport,
    EventType,
    Finding,
    Hypothesis,
    OutcomeStatus,
    Severity,
)
from agentdebug.stages import Attributor, Detector
from agentdebug.store.history import earlier_run_of, history_note, history_runs
from agentdebug.text import shorten

log = logging.getLogger("agentdebug.diagnose")

FREE_TIER_NOTE = (
    "free tier: rules and heuristic attribution only, no model was called "
    "(configure a model for model-based attribution)"
)


FREE_TIER_WITH_MODEL_NOTE = (
    "free tier: rules and heuristic attribution only; a model is configured but this "
    "attributor does not use it (try --attributor auto)"
)


def new_report_id() -> str:
    return "r" + uuid.uuid4().hex[:15]


def diagnose(
    trajectory: AgentTrajectory,
    *,
    attributor: str = "heuristic",
    detectors: Sequence[str] | None = None,
    registry: Registry | None = None,
    settings: LLMSettings | None = None,
    with_reference: bool = False,
    budget: Budget | None = None,
    judge: bool = False,
    no_fallback: bool | None = None,
) -> DiagnosticReport:
    """Run the detectors and one attributor over a trajectory.

    ``with_reference`` lets strategies see the task's reference answer (the
    Who&When "with ground truth" setting); by default it is hidden. ``judge`` adds
    the LLM judge to the detectors. ``budget`` caps model calls and tokens. When a
    model-based stage cannot run or fails, the heuristic answer is used and the
    report says which call failed; with ``no_fallback`` the error is raised instead.
    """
    reg = registry or get_registry()
    if not trajectory.events:
        raise AgentDebugError(f"run '{trajectory.id}' has no events to diagnose")
    unread = None
    try:
        llm = settings or current_settings()
    except ConfigError as exc:  # (a free-tier diagnosis needs none of them: it goes on)
        if attributor != "heuristic" or judge:
            raise
        llm, unread = LLMSettings(), f"model settings unreadable ({exc}); {FREE_TIER_INSTEAD}"
    strict = llm.no_fallback if no_fallback is None else no_fallback
    seen = (
        trajectory if with_reference else trajectory.model_copy(update={"reference_answer": None})
    )
    if detectors is not None:
        chosen = [reg.detector(name) for name in detectors]
    else:
        chosen = [d for d in reg.detectors.values() if judge or not getattr(d, "on_request", False)]
    att = reg.attributor(attributor)
    active = llm.model_copy(update={"no_fallback": True}) if strict and not llm.no_fallback else llm
    with use_settings(active), budget_scope(budget), audit_scope() as log:
        chosen = _usable(chosen, llm, strict)
        att = _usable_attributor(att, reg, llm, strict)
        findings, hypotheses = _run(seen, chosen, att, reg, strict)
        findings, hypotheses = _grounded(seen, findings, hypotheses)
    audit = [a for a in log.entries if a.stage != "note"]
    # (the plugins that could not contribute first: the report is short of them)
    notes = [*plugin_notes(reg), *(a.detail or "" for a in log.entries if a.stage == "note")]

    cost = Cost.of(audit)
    tier = "model" if cost.calls or cost.cached_calls else "free"
    looked = not any(a.stage == "attribute" and a.outcome == "skipped" for a in audit)
    if tier == "free" and not _needs_model(att) and looked:  # (nothing failed: no tier to note)
        notes.insert(0, FREE_TIER_NOTE if not llm.configured else FREE_TIER_WITH_MODEL_NOTE)
    if unread is not None:
        notes.insert(0, unread)
    history = history_note(trajectory)  # a run read with the runs it continues
    if history is not None:
        notes.append(history)
    symptom = _symptom(trajectory, findings)
    hypotheses = [_named(trajectory, h) for h in hypotheses]
    root = hypotheses[0] if hypotheses else None
    report = DiagnosticReport(
        id=new_report_id(),
        trajectory_id=trajectory.id,
        tier=tier,
        detectors=[d.name for d in chosen],
        attributor=att.name,
        findings=findings,
        hypotheses=hypotheses,
        symptom=symptom,
        summary=_summary(trajectory, findings, root, symptom, reg),
        fix=fix_of(root, reg, trajectory, _who(trajectory, root) if root else None),
        audit=audit,
        cost=cost,
        notes=notes,
        metadata=_report_metadata(trajectory, with_reference, llm),
    )
    reg.notify_report(report, trajectory)
    return report


def _report_metadata(
    trajectory: AgentTrajectory, with_reference: bool, llm: LLMSettings
) -> dict[str, object]:
    out: dict[str, object] = {"with_reference": with_reference}
    if llm.configured:
        out["model"] = llm.model
    runs = history_runs(trajectory)
    if runs:  # the runs read, oldest first (the report's own run last)
        out["history"] = runs
    return out


def _grounded(
    trajectory: AgentTrajectory, findings: list[Finding], hypotheses: list[Hypothesis]
) -> tuple[list[Finding], list[Hypothesis]]:
    """Every quote checked against the trace; claims resting on quotes that are not
    there lose confidence (see :mod:`agentdebug.evidence`). Hypotheses keep the
    strategy's ranking: grounding informs the reader, it does not re-rank."""
    started = time.perf_counter()
    grounder = Grounder(trajectory)
    findings = ground_findings(findings, grounder)
    hypotheses = ground_hypotheses(hypotheses, grounder)
    evidence = [e for f in findings for e in f.evidence] + [
        e for h in hypotheses for e in h.evidence
    ]
    checked = [e for e in evidence if e.grounded is not None]
    missing = sum(1 for e in checked if e.grounded is False)
    record_audit(
        _audit(
            "ground",
            "evidence",
            started,
            detail=f"{len(checked)} quote(s) checked, {missing} not found in the trace",
        )
    )
    return findings, hypotheses


def _needs_model(strategy: object) -> bool:
    return bool(getattr(strategy, "requires_model", False))


def _usable(detectors: list[Detector], llm: LLMSettings, strict: bool) -> list[Detector]:
    if llm.configured:
        return detectors
    out = []
    for det in detectors:
        if not _needs_model(det):
            out.append(det)
            continue
        if strict:
            raise NoModelConfigured(f"detector '{det.name}' needs a model")
        note(
            "diagnose",
            f"detector '{det.name}' needs a model and none is configured; it did not run",
        )
    return out


def _usable_attributor(
    att: Attributor, reg: Registry, llm: LLMSettings, strict: bool
) -> Attributor:
    if llm.configured or not _needs_model(att):
        return att
    if strict:
        raise NoModelConfigured(f"attributor '{att.name}' needs a model")
    note(
        "diagnose",
        f"attributor '{att.name}' needs a model and none is configured; "
        "the heuristic attributor answered instead",
    )
    return reg.attributor("heuristic")


def _run(
    trajectory: AgentTrajectory,
    chosen: Sequence[Detector],
    att: Attributor,
    reg: Registry,
    strict: bool,
) -> tuple[list[Finding], list[Hypothesis]]:
    """Detectors then the attributor, each guarded; audit entries go to the scope.
    The attributor is given the findings of registered failure modes only."""
    findings = run_detectors(trajectory, chosen, reg, strict)
    findings.sort(key=lambda f: f.step_index if f.step_index is not None else 10**9)
    started = time.perf_counter()
    hypotheses: list[Hypothesis] = []
    if _nothing_failed(trajectory, findings):
        why = _no_failure_note(trajectory)
        record_audit(_audit("attribute", att.name, started, outcome="skipped", detail=why))
        note("diagnose", why)
        return findings, hypotheses
    try:
        with audit_scope() as own:  # (what it said when it names nothing: why)
            answer = hypotheses_of(att.attribute(trajectory, attributable(findings)))
        hypotheses = _on_the_run(trajectory, answer, att.name)
        if not hypotheses and _unknown_and_clean(trajectory, findings):
            # (no guess at a step: nothing found, and nothing says the run failed)
            record_audit(
                _audit(
                    "attribute", att.name, started, outcome="no-answer", detail=NO_FAILURE_UNKNOWN
                )
            )
            note("diagnose", NO_FAILURE_UNKNOWN)
        else:
            record_audit(
                _audit("attribute", att.name, started, detail=f"{len(hypotheses)} hypothesis(es)")
            )
            if not hypotheses and not strict and att.name != "heuristic":
                hypotheses = _free_tier_instead(trajectory, findings, reg, att.name, own.entries)
    except Exception as exc:
        if not isinstance(exc, AgentDebugError):
            log.exception("attributor %s failed", att.name)
        why = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
        if strict or (isinstance(exc, AgentDebugError) and not isinstance(exc, LLMError)):
            if isinstance(exc, AgentDebugError):
                raise
            raise AgentDebugError(f"attributor '{att.name}' failed: {why}") from exc
        record_audit(_audit("attribute", att.name, started, outcome="error", detail=why))
        if att.name == "heuristic":
            note("diagnose", f"attributor '{att.name}' failed ({why}); no root cause named")
        else:
            hypotheses = reg.attributor("heuristic").attribute(trajectory, attributable(findings))
            note(
                "diagnose",
                f"attributor '{att.name}' failed: {why}; {HEURISTIC_INSTEAD}",
            )
    return findings, hypotheses


def _free_tier_instead(
    trajectory: AgentTrajectory,
    findings: Sequence[Finding],
    reg: Registry,
    name: str,
    said: Sequence[AuditEntry],
) -> list[Hypothesis]:
    """The free tier's answer, for a run that failed and a model attributor that named
    no step in it (lifecycle with no error instance that survived grounding): its
    candidate is given, and a note says why, rather than no root cause at all (with
    ``no_fallback`` the report names none, as the benchmarks score it)."""
    hypotheses = reg.attributor("heuristic").attribute(trajectory, attributable(findings))
    if hypotheses:
        why = next(
            (e.detail for e in reversed(said) if e.outcome == "no-answer" and e.detail),
            "no answer",
        )
        why = why.removesuffix("; no answer")
        note(
            "diagnose",
            f"attributor '{name}' named no root cause ({why}); {HEURISTIC_INSTEAD}",
        )
    return hypotheses


# the mode of a symptom that is the run's own verdict on its final answer, not a
# detector's finding (the run failed its success check after every finding)
FAILED_ANSWER = "outcome.failed_answer"
NO_FAILURE = "the run succeeded and no detector found a fault: no root cause to look for"
NO_FAILURE_UNKNOWN = (
    "the run does not say whether it failed, and no detector found a fault: "
    "no root cause to look for"
)


def _on_the_run(
    trajectory: AgentTrajectory, hypotheses: Sequence[Hypothesis], name: str
) -> list[Hypothesis]:
    """The hypotheses that name a step of this run (or none): an attributor's
    answer outside it (a plugin's, say) is dropped, with a note, rather than
    reported as the root cause of a run that has no such step. (Agent names are
    not checked: a model may name an agent loosely, "Orchestrator (thought)".)"""
    steps = {e.step_index for e in trajectory.events}
    kept: list[Hypothesis] = []
    for h in hypotheses:
        if h.step_index is None or h.step_index in steps:
            kept.append(h)
            continue
        note(
            "diagnose",
            f"attributor '{name}' named {h.agent_name or 'no agent'} at step {h.step_index}, "
            "a step this run does not have; dropped",
        )
    return kept


def _nothing_failed(trajectory: AgentTrajectory, findings: Sequence[Finding]) -> bool:
    """A run marked a success, one its caller stopped before it ended
    (``Outcome.stopped_by``), or one still running (diagnosed in flight), with
    nothing above information found: no failure to attribute (blaming a step would
    invent one, and a fix would be acted on). A run whose outcome is unknown is
    still given to the attributor (a model may find what no rule did), but the
    heuristic names no step in it with nothing found."""
    outcome = trajectory.outcome
    ended_well = outcome.status in (OutcomeStatus.SUCCESS, OutcomeStatus.RUNNING) or (
        outcome.status is OutcomeStatus.UNKNOWN and bool(outcome.stopped_by)
    )
    return ended_well and all(f.severity is Severity.INFO for f in findings)


def _unknown_and_clean(trajectory: AgentTrajectory, findings: Sequence[Finding]) -> bool:
    """A run that does not say how it ended (an imported conversation, a TRAIL
    trace), in which nothing above information was found."""
    return trajectory.outcome.status is OutcomeStatus.UNKNOWN and all(
        f.severity is Severity.INFO for f in findings
    )


def _no_failure_note(trajectory: AgentTrajectory) -> str:
    if trajectory.outcome.status is OutcomeStatus.RUNNING:
        return (
            "the run has not ended (still running, or its process died before it could "
            "say how it ended) and no detector found a fault so far: no root cause to "
            "look for yet"
        )
    stopped = trajectory.outcome.stopped_by
    if trajectory.outcome.status is OutcomeStatus.UNKNOWN and stopped:
        return (
            f"the run was stopped before it ended ({stopped}) and no detector found a "
            "fault: no root cause to look for"
        )
    return NO_FAILURE


def _symptom(trajectory: AgentTrajectory, findings: Sequence[Finding]) -> Finding | None:
    """Where the failure shows: the latest serious finding, else the last finding
    that is more than information (an error a retry got past shows nothing); but
    a run that failed on its final answer (its success check, given after every
    finding) shows its failure there (:data:`FAILED_ANSWER`)."""
    serious = [f for f in findings if f.severity in (Severity.ERROR, Severity.CRITICAL)]
    faults = [f for f in findings if f.severity is not Severity.INFO]
    found = (
        max(  # (at one step, a critical finding says it best)
            serious,
            key=lambda f: (
                f.step_index if f.step_index is not None else -1,
                f.severity is Severity.CRITICAL,
            ),
        )
        if serious
        else (faults[-1] if faults else None)
    )
    outcome = trajectory.outcome
    if outcome.status is not OutcomeStatus.FAILURE or not outcome.reason:
        return found
    events = trajectory.events
    final = next(
        (i for i in range(len(events) - 1, -1, -1) if events[i].type is EventType.FINAL_ANSWER),
        None,
    )
    if final is None:
        return found
    at = (
        -1
        if found is None
        else next((i for i, e in enumerate(events) if e.id == found.event_id), -1)
    )
    if at >= final:
        return found
    answer = events[final]
    reason = shorten(outcome.reason, 200)
    return Finding(
        detector="outcome",
        mode_id=FAILED_ANSWER,
        message=reason
        if "final answer" in reason.lower()
        else f"the final answer failed: {reason}",
        event_id=answer.id,
        step_index=answer.step_index,
        agent_name=answer.agent_name,
        confidence=1.0,
    )


def _summary(
    trajectory: AgentTrajectory,
    findings: Sequence[Finding],
    root: Hypothesis | None,
    symptom: Finding | None,
    reg: Registry,
) -> str:
    parts: list[str] = []
    if symptom is not None:
        said = symptom.message.rstrip().rstrip(".")  # (one full stop, not the quote's too)
        parts.append(f"The failure shows at step {symptom.step_index}: {said}.")
    elif trajectory.outcome.status.value == "failure":
        reason = trajectory.outcome.reason or "the run is marked failed"
        parts.append(f"No detector found a concrete error ({reason}).")
    elif trajectory.outcome.status is OutcomeStatus.SUCCESS and root is None:
        reason = f" ({trajectory.outcome.reason})" if trajectory.outcome.reason else ""
        parts.append(f"The run succeeded{reason} and no detector found an error.")
    else:
        parts.append("No detector found an error.")
    if root is not None:
        who = _who(trajectory, root) or "an unnamed agent"
        mode = reg.failure_modes.get(root.mode_id or "")
        what = f" ({mode.name.lower()})" if mode else ""
        same = symptom is not None and symptom.step_index == root.step_index
        where = "at the same step" if same else f"at step {root.step_index}"
        earlier = earlier_run_of(trajectory, root.step_index)
        if earlier is not None:
            where += f" of run {earlier}, which this run continues"
        if root.metadata.get(DEFAULT_GUESS):  # (a place to look, not a finding: say so)
            why = (root.rationale or "").removeprefix("no detector fired; ")
            parts.append(
                f"No rule located the cause; as a default guess, {who} {where} ({why}), "
                f"confidence {root.confidence:.2f}: check it against the run, or diagnose "
                "with a model."
            )
        else:
            parts.append(
                f"Most likely root cause: {who} {where}{what}, confidence {root.confidence:.2f}."
            )
        acting = root.metadata.get("agent_acting_at_step")
        if acting:  # (a model named an agent that did not act there: both kept, said)
            parts.append(f"(At step {root.step_index} it was {acting} that acted, not {who}.)")
    return " ".join(parts)


def blames_input(trajectory: AgentTrajectory, root: Hypothesis) -> bool:
    """Whether the root cause is the run's input itself: its input event, or an
    error of no agent filed under it at its step (an input the run's schema refuses)."""
    if root.agent_name:
        return False
    event = trajectory.event(root.event_id) if root.event_id else None
    if event is not None and event.type is EventType.ERROR and event.parent_id:
        parent = trajectory.event(event.parent_id)
        if parent is not None and parent.step_index == event.step_index:
            event = parent
    return event is not None and event.type is EventType.USER_INPUT


def blames_run_code(trajectory: AgentTrajectory, root: Hypothesis) -> str | None:
    """How to name the root cause when it is the run's own code, no agent's: an
    exception that left the run's ``with`` block, or the answer the run gave only to
    ``set_outcome``, in a run with no one agent of its own (see
    :mod:`agentdebug.capture.ending`): "the run's own code", and "(before any agent
    acted)" when no agent had. None for anything else."""
    event = trajectory.event(root.event_id) if root.event_id and not root.agent_name else None
    if event is None or not event.metadata.get(BY_THE_RUN):
        return None
    for earlier in trajectory.events:
        if earlier.id == event.id:
            return "the run's own code (before any agent acted)"
        if earlier.agent_name:
            break
    return "the run's own code"


def _named(trajectory: AgentTrajectory, h: Hypothesis) -> Hypothesis:
    """``h`` with what names it where the report names who, when it blames no agent:
    the run's input (``blames_input``), or the run's own code (``blames_run_code``)."""
    if blames_input(trajectory, h):
        return h.model_copy(update={"metadata": {**h.metadata, "blames_input": True}})
    own = blames_run_code(trajectory, h)
    if own is not None:
        return h.model_copy(update={"metadata": {**h.metadata, "blames_run_code": own}})
    return h


def _who(trajectory: AgentTrajectory, root: Hypothesis) -> str | None:
    """The root cause's agent, "the run's input" when it is the input itself, or
    "the run's own code" when it is that."""
    if root.agent_name:
        return root.agent_name
    if blames_input(trajectory, root):
        return "the run's input"
    return blames_run_code(trajectory, root)
