"""The free-tier attributor: ranks (agent, step) candidates from findings and structure.

The principle is the earliest decisive error. A failing tool is rarely the cause of
its own failure: the cause is the decision that called it (the code, the arguments,
the plan), so environment-independent tool errors are charged to the event that
issued the call. Environment faults (rate limits, timeouts, refused credentials)
are charged to the tool step itself, since no agent decision caused them. Earlier
candidates are preferred, because errors propagate forward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentdebug.attribute.crashed import (
    code_fix,
    crashed_on_task,
    unimplemented,
    unimplemented_fix,
)
from agentdebug.attribute.lineage import writer_of
from agentdebug.attribute.words import (
    answer_origin,
    asked_for,
    branch_named,
    dropped_by,
    failed_words,
    quoted_by_reason,
)
from agentdebug.detect.claimed import CLAIMED, only_looks_up
from agentdebug.detect.invented import COVERS
from agentdebug.detect.invented import RULE as INVENTED
from agentdebug.detect.signals import (
    CODE_FIX,
    DECISION_TYPES,
    ENVIRONMENT_MODES,
    ERROR_OR_REFUSAL,
    FAILURE_MODE,
    RESULT_TYPES,
    RETRY_OF,
    error_text,
    tool_name,
)
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    EventType,
    Evidence,
    Finding,
    Hypothesis,
    OutcomeStatus,
    Severity,
)
from agentdebug.text import shorten

PASSIVE_TYPES = RESULT_TYPES | {EventType.ERROR, EventType.USER_INPUT, EventType.CHECKPOINT}
_MODEL_TYPES = frozenset({EventType.LLM_CALL, EventType.LLM_RESPONSE})

# Where no detector fired: a place to look (the first decision, the final answer, or a
# step the run's words point at), marked in the hypothesis's metadata so that a report
# says it is a guess.
DEFAULT_GUESS = "default_guess"
FIRST_DECISION = "no detector fired; the first decision commits the run to its approach"
FINAL_ANSWER = "no detector fired; this step produced the final answer"
FIRST_TRANSFORM = (
    "no detector fired; in a pipeline of code nodes, the first step that worked on what "
    "the step before it loaded"
)
FIRST_ACT = (
    "no detector fired; the calls before it only looked things up, and this is the "
    "first step that acted on what they found"
)
# why a failed result a later finding covers is not its call's fault, by rule
_COVERED_WHY = {
    INVENTED: "the tool failed on the task's own arguments",
    "": "the call was refused by what it reached, not for its arguments",
}


@dataclass
class _Candidate:
    event: AgentEvent
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    modes: dict[str, float] = field(default_factory=dict)  # mode -> weight charged
    fix: str | None = None  # a fix the run itself makes concrete (see _value_written)
    inferred: bool = False  # the fix was inferred from a value written (a rule's wins)
    # the fix is to code that ran (a rerun runs it unchanged): True, or why no rerun helps
    code_fix: bool | str = False


def causing_event(
    trajectory: AgentTrajectory,
    event: AgentEvent,
    *,
    by_id: dict[str, AgentEvent] | None = None,
    position: dict[str, int] | None = None,
) -> AgentEvent | None:
    """The decision that led to a failure: its parent call; for a failed step (a
    span) the model call it holds, which decided what the step ran; for a tool call
    that failed itself the model call of its step before it; else the nearest
    preceding decision by an agent other than the tool's own speaker, or the
    nearest tool call not answered yet (one that has its own result, or failed
    itself, is not what failed here). Pass the trajectory's id maps when calling it
    for many events."""
    events = trajectory.events
    by_id = by_id if by_id is not None else {e.id: e for e in events}
    parent = by_id.get(event.parent_id) if event.parent_id else None
    if parent is not None and parent.type in DECISION_TYPES:
        return parent
    at = (
        position[event.id]
        if position is not None
        else next(i for i, e in enumerate(events) if e.id == event.id)
    )
    if event.type in (EventType.SPAN, EventType.AGENT_START):  # a step that failed
        held = [e for e in events[at + 1 :] if e.parent_id == event.id and e.type in DECISION_TYPES]
        model = [e for e in held if e.type in _MODEL_TYPES and e.error is None]
        if model or held:
            return (model or held)[-1]
    pending = 0  # results seen walking back, each the answer of a call before it
    for prior in reversed(events[:at]):
        if (
            event.type is EventType.TOOL_CALL
            and prior.type in _MODEL_TYPES
            and prior.agent_name == event.agent_name
            and prior.parent_id == event.parent_id
        ):
            return prior  # (the model call of its step that asked for the call)
        if prior.type in DECISION_TYPES and prior.agent_name != event.agent_name:
            return prior
        if prior.type in RESULT_TYPES:
            pending += 1
        elif prior.type is EventType.TOOL_CALL and prior.error is None:
            if not pending:
                return prior
            pending -= 1
    return None


def _raised_by_own_step(event: AgentEvent, by_id: dict[str, AgentEvent]) -> bool:
    """Whether an error event was raised by its agent's own step (filed under that
    agent's start, as a graph node's exception is), not by a tool it called; or is
    a model call that failed, which is the agent's own step, not a call an earlier
    decision issued."""
    if event.type is EventType.LLM_RESPONSE:
        return event.error is not None
    if event.type is not EventType.ERROR or not event.parent_id:
        return False
    parent = by_id.get(event.parent_id)
    return (
        parent is not None
        and parent.type is EventType.AGENT_START
        and parent.agent_name == event.agent_name
    )


def _raised_before_deciding(
    error: AgentEvent, events: Sequence[AgentEvent], position: dict[str, int]
) -> bool:
    """An error event of an agent's step recorded before that step made any
    decision (a ReAct step function that raised before it chose an action): the
    step's own failure, not a call an earlier step issued."""
    if error.type is not EventType.ERROR or error.parent_id:
        return False
    for prior in reversed(events[max(0, position[error.id] - 64) : position[error.id]]):
        if prior.step_index != error.step_index:
            return True
        if prior.agent_name == error.agent_name and prior.type in DECISION_TYPES:
            return False
    return False


def _failed_call_of(
    error: AgentEvent, events: Sequence[AgentEvent], position: dict[str, int]
) -> AgentEvent:
    """The failed model call an agent's error came out of: the last model call of
    the same agent and step before it, when that call failed; else the error."""
    if error.type is not EventType.ERROR:
        return error
    for prior in reversed(events[max(0, position[error.id] - 64) : position[error.id]]):
        if prior.agent_name != error.agent_name or prior.step_index != error.step_index:
            continue  # (a parallel branch's events may come in between)
        if prior.type is EventType.LLM_RESPONSE:
            return prior if prior.error is not None else error
        if prior.type is EventType.AGENT_START:
            break
    return error


class HeuristicAttributor:
    """Ranks candidate (agent, step) pairs without a model."""

    name = "heuristic"

    def __init__(self, *, max_hypotheses: int = 5) -> None:
        self.max_hypotheses = max_hypotheses

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        events = trajectory.events
        if not events:
            return []
        position = {e.id: i for i, e in enumerate(events)}
        by_id = {e.id: e for e in events}
        candidates: dict[str, _Candidate] = {}
        ended: dict[str, float] = {}  # event id -> weight charged for how the run ended

        def charge(event: AgentEvent, weight: float, reason: str, finding: Finding) -> None:
            cand = candidates.setdefault(event.id, _Candidate(event))
            cand.score += weight
            cand.reasons.append(reason)
            cand.modes[finding.mode_id] = cand.modes.get(finding.mode_id, 0.0) + weight
            cand.evidence.extend(finding.evidence[:2])
            fix = finding.metadata.get("fix")
            if (
                (cand.fix is None or cand.inferred)
                and isinstance(fix, str)
                and (finding.event_id == event.id)
            ):
                cand.fix = fix  # (a rule that knows the concrete fix at its own event)
                cand.inferred = False
                if finding.metadata.get(CODE_FIX):  # (a fix no rerun makes: the loop stops)
                    cand.code_fix = finding.metadata[CODE_FIX]

        # failed results an answer papered over, whose call was right: a figure no
        # tool gave, after a call that took the task's own arguments (see
        # detect/invented.py), or a reply saying done what the world refused (a card
        # declined, a timeout: see detect/claimed.py). The failure is not charged to
        # the decision to call
        covered = {
            f.metadata[COVERS]: _COVERED_WHY.get(f.rule_id or "", _COVERED_WHY[""])
            for f in findings
            if f.metadata.get(COVERS)
        }

        # failed results a reply then said were done (see detect/claimed.py)
        overclaimed = {f.metadata.get(CLAIMED) for f in findings if f.metadata.get(CLAIMED)}

        # attempts another attempt followed (a RetryPolicy's): the same failure
        # again, charged once, at the last attempt (else the decision before the
        # node is charged once per attempt and outweighs the node that failed)
        retried = {
            e.metadata.get(RETRY_OF)
            for e in events
            if e.type is EventType.AGENT_START and e.metadata.get(RETRY_OF)
        }
        for finding in findings:
            event = by_id.get(finding.event_id or "")
            if event is None or finding.severity is Severity.INFO:
                continue  # (an info finding is not a fault: an error a retry got past)
            if retried and event.type is EventType.ERROR and event.parent_id in retried:
                continue
            conf = finding.confidence
            if event.type is EventType.ERROR and event.metadata.get(FAILURE_MODE):
                # a framework's error its integration placed at the step it concerns
                charge(event, conf, finding.message, finding)
            elif finding.mode_id in ENVIRONMENT_MODES:
                charge(event, 0.5 * conf, f"environment fault here: {finding.message}", finding)
            elif event.id in covered:
                charge(event, 0.5 * conf, f"{covered[event.id]}: {finding.message}", finding)
            elif finding.mode_id.startswith("system.") and unimplemented(event):
                # code with no implementation for how it was run: the decision before
                # it did nothing wrong, and a rerun runs the same code
                said = (event.error.message if event.error else "") or finding.message
                charge(
                    event, 0.8 * conf, f"its code is not implemented: {finding.message}", finding
                )
                if candidates[event.id].fix is None:
                    candidates[event.id].code_fix = True
                    candidates[event.id].fix = unimplemented_fix(event, said)
            elif finding.mode_id.startswith("system.") or (
                finding.mode_id == "action.malformed_tool_call" and event.type in PASSIVE_TYPES
            ):
                cause = causing_event(trajectory, event, by_id=by_id, position=position)
                if cause is not None and (
                    _raised_by_own_step(event, by_id)
                    or _raised_before_deciding(event, events, position)
                ):
                    # an agent's own code raised (a graph node), not a tool it called:
                    # its step is as likely the cause as the decision before it (a
                    # node's error that a model call of its step raised is charged to
                    # that call: one failure, one candidate)
                    own = _failed_call_of(event, events, position)
                    written = writer_of(trajectory, event, position)
                    if written is not None:  # the step choked on what a decision wrote
                        writer, wrote = written
                        said = error_text(event.error) if event.error else ""
                        by = event.agent_name or f"step {event.step_index}"
                        charge(
                            writer,
                            0.6 * conf,
                            f"wrote {wrote!r}, which {by} could not use at step "
                            f"{event.step_index}: {finding.message}",
                            finding,
                        )
                        if candidates[writer.id].fix is None:  # (a rule's own fix wins)
                            candidates[writer.id].inferred = True
                            candidates[writer.id].fix = (
                                f"At step {writer.step_index}, {writer.agent_name}: "
                                f"the output gave {shorten(wrote, 80)!r}, which {by} could not use "
                                f'at step {event.step_index} ("{shorten(said, 160)}"). '
                                f"Give that value in the form {by} expects."
                            )
                        charge(
                            own, 0.4 * conf, f"raised in its own step: {finding.message}", finding
                        )
                        continue
                    charge(own, 0.6 * conf, f"raised in its own step: {finding.message}", finding)
                    charge(
                        cause,
                        0.4 * conf,
                        f"decided before the step that raised at {event.step_index}: "
                        f"{finding.message}",
                        finding,
                    )
                elif cause is not None and crashed_on_task(trajectory, event, cause):
                    # (the tool's own code died on what the user wrote: see crashed.py)
                    said = error_text(event.error) if event.error else finding.message
                    charge(
                        event,
                        0.8 * conf,
                        f"{tool_name(event) or 'the tool'}'s own code raised on the task's "
                        f"own arguments: {finding.message}",
                        finding,
                    )
                    charge(cause, 0.2 * conf, f"issued the call that failed: {said}", finding)
                    if candidates[event.id].fix is None:
                        candidates[event.id].code_fix = True
                        candidates[event.id].fix = code_fix(event, cause, said)
                elif cause is not None:
                    issued = "issued the call that failed"
                    if cause.parent_id == event.id:  # (a model call of the step that failed)
                        issued = "decided what its step ran, which failed"
                    elif cause.metadata.get("edited"):  # (arguments a person changed)
                        issued = "ran a call whose arguments were edited after the model asked"
                        issued += ", which failed"
                    # (a reply that then said the failed action was done is the surer
                    # fault: the call may have been right, the claim is not)
                    weight = 0.5 if event.id in overclaimed else 0.8
                    charge(
                        cause,
                        weight * conf,
                        f"{issued} at step {event.step_index}: {finding.message}",
                        finding,
                    )
                    charge(event, 0.2 * conf, f"failure surfaced here: {finding.message}", finding)
                else:
                    charge(event, 0.6 * conf, finding.message, finding)
            elif finding.mode_id == "action.repeated_action" and finding.evidence:
                # The first attempt is where the approach was chosen; the first
                # repeat is where it should have changed.
                first = by_id.get(finding.evidence[0].event_id or "")
                if first is not None and first.id != event.id:
                    charge(
                        first,
                        0.6 * conf,
                        f"first of the repeated actions: {finding.message}",
                        finding,
                    )
                    charge(event, 0.4 * conf, finding.message, finding)
                else:
                    charge(event, conf, finding.message, finding)
            elif _run_end_symptom(finding, event):
                # How the run ended (done over an error never resolved, an answer that
                # reports an error): one symptom however many rules say it, so an
                # event is charged for the strongest only, not for each
                weight = 0.6 * conf
                before = ended.get(event.id, 0.0)
                if weight > before:
                    ended[event.id] = weight
                    charge(event, weight - before, finding.message, finding)
            else:
                charge(event, conf, finding.message, finding)

        if not candidates:
            return self._structural_prior(trajectory)
        at_step: dict[tuple[str | None, int | None], Finding] = {}  # its strongest finding
        for finding in findings:
            if finding.severity is Severity.INFO or finding.step_index is None:
                continue
            key = (finding.agent_name, finding.step_index)
            if key not in at_step or finding.confidence > at_step[key].confidence:
                at_step[key] = finding

        n = len(events)
        ranked: list[tuple[float, _Candidate]] = []
        for cand in candidates.values():
            earliness = 1.0 - position[cand.event.id] / max(1, n - 1) if n > 1 else 1.0
            ranked.append((cand.score * (1.0 + 0.5 * earliness), cand))
        ranked.sort(key=lambda item: (-item[0], position[item[1].event.id]))
        total = sum(score for score, _ in ranked)
        out: list[Hypothesis] = []
        seen: set[tuple[str | None, int]] = set()
        for score, cand in ranked:
            key = (cand.event.agent_name, cand.event.step_index)
            if key in seen:
                continue
            seen.add(key)
            confidence = round(min(0.9, (1 - math.exp(-score)) * score / (total + 0.25)), 3)
            out.append(
                Hypothesis(
                    agent_name=cand.event.agent_name,
                    step_index=cand.event.step_index,
                    event_id=cand.event.id,
                    strategy=self.name,
                    confidence=max(confidence, 0.01),
                    mode_id=_mode_of(cand, at_step),
                    rationale="; ".join(dict.fromkeys(cand.reasons)),
                    evidence=_distinct(cand.evidence)[:4],
                    metadata=(
                        {"fix": cand.fix, **({CODE_FIX: cand.code_fix} if cand.code_fix else {})}
                        if cand.fix
                        else {}
                    ),
                )
            )
            if len(out) >= self.max_hypotheses:
                break
        return out

    def _structural_prior(self, trajectory: AgentTrajectory) -> list[Hypothesis]:
        """No finding to go on, in a run known to have failed (in one whose outcome is
        unknown, none: nothing says it failed): errors propagate forward, so the first
        step that commits to an approach is the likeliest decisive one, then the step
        that gave the answer. In a run of code nodes alone (no model, no tool call, an
        answer that is the graph's state), the nodes' updates are its decisions, and of
        three or more the first is read as loading the run's input (a query, a file, a
        fetch: data given) and the second as the first to commit to an approach.
        A call that failed (a model call that timed out, tried again), or that was
        stopped before it said anything, decided nothing."""
        if trajectory.outcome.status is not OutcomeStatus.FAILURE:
            return []  # (nothing found, and no failure known: a guess would invent one)
        decisions = [e for e in trajectory.events if e.type in DECISION_TYPES and e.agent_name]
        first_why, skip = FIRST_DECISION, 0
        if not decisions:  # (a pipeline of code nodes: what each node's update decided)
            decisions = [
                e
                for e in trajectory.events
                if e.type is EventType.AGENT_END and e.agent_name and e.output not in (None, {})
            ]
            if len(decisions) >= 3:  # (its first node loads; the next works on what it got)
                first_why, skip = FIRST_TRANSFORM, 1
        decisions = [e for e in decisions if not _decided_nothing(e)] or decisions
        if not decisions:
            return []
        if skip >= len(decisions):  # (of those left, the first is all there is)
            first_why, skip = FIRST_DECISION, 0
        picks: list[tuple[AgentEvent, float, str]] = []
        quoted = quoted_by_reason(trajectory, decisions)
        said: tuple[AgentEvent, float, str] | None = None
        if quoted is not None:
            event, words, in_quotes = quoted
            said = (
                event,
                0.2 if in_quotes else 0.16,
                "no detector fired; the failure's reason names what this step said "
                f"and no other step did ({', '.join(repr(w) for w in words[:3])})",
            )
            if in_quotes:  # (a value named without quotes may be the one wanted: below)
                picks.append(said)

        dropped = dropped_by(trajectory, decisions)
        if dropped is not None and all(dropped[0].id != e.id for e, _, _ in picks):
            event, words = dropped
            picks.append(
                (
                    event,
                    0.18,
                    "no detector fired; the failure's reason names what this step was "
                    "given and did not pass on, nor did any step after it "
                    f"({', '.join(repr(w) for w in words[:3])})",
                )
            )

        if said is not None and all(said[0].id != e.id for e, _, _ in picks):
            picks.append(said)

        origin = answer_origin(trajectory, decisions)
        if origin is not None and all(origin.id != e.id for e, _, _ in picks):
            picks.append(
                (
                    origin,
                    0.17,
                    "no detector fired; the final answer carries what this step of "
                    f"{origin.agent_name} first said (another agent gave the answer)",
                )
            )

        def named(event: AgentEvent) -> bool:  # (one candidate per agent and step)
            return any(
                (e.agent_name, e.step_index) == (event.agent_name, event.step_index)
                for e, _, _ in picks
            )

        first = 0.15
        if first_why is FIRST_DECISION:  # (lookups commit to nothing: what acted on them)
            wrong = failed_words(trajectory)
            acted = next(
                (e for e in decisions if not only_looks_up(e) or asked_for(e, wrong)),
                None,
            )
            if acted is not None and acted is not decisions[0] and not named(acted):
                picks.append((acted, 0.15, FIRST_ACT))
                first = 0.12
        if not named(decisions[skip]):
            picks.append((decisions[skip], first, first_why))
        for i, (event, conf, why) in enumerate(list(picks)):  # (a fan-out's branch:
            if why in (FIRST_DECISION, FIRST_ACT):  # the one the failure names, first)
                branch = branch_named(trajectory, event, decisions)
                if branch is not None and not named(branch):
                    picks[i] = (event, conf - 0.02, why)  # (kept, after it)
                    picks.insert(i, (branch, conf, f"{why}; of its parallel branches, the "
                                 "one whose output says what the failure names"))  # fmt: skip
                    break
        finals = [e for e in decisions if e.type is EventType.FINAL_ANSWER] or decisions[-1:]
        if not named(finals[-1]):
            picks.append((finals[-1], 0.1, FINAL_ANSWER))
        return [
            Hypothesis(
                agent_name=e.agent_name,
                step_index=e.step_index,
                event_id=e.id,
                strategy=self.name,
                confidence=conf,
                rationale=why,
                # (a place to look, not a finding: the first decision, the final
                # answer, or a step the run's words point at; a report says so)
                metadata={DEFAULT_GUESS: True},
            )
            for e, conf, why in picks
        ]


def _mode_of(cand: _Candidate, own: dict[tuple[str | None, int | None], Finding]) -> str | None:
    """The mode of a step blamed: that of the step's own strongest finding, where it
    has one (a failure charged to it from a later step does not relabel it); else the
    mode that contributed most weight, ties going to the first charged."""
    found = own.get((cand.event.agent_name, cand.event.step_index))
    if found is not None:
        return found.mode_id
    return max(cand.modes, key=lambda m: cand.modes[m]) if cand.modes else None


def _distinct(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Each quote once, first seen first (two findings at one event often quote the
    same text; so do a tool's failed result and the error its node raised with it,
    two events at one step)."""
    seen: dict[tuple[int | str | None, str | None, str | None], Evidence] = {}
    for ev in evidence:
        where = ev.step_index if ev.step_index is not None else ev.event_id
        seen.setdefault((where, ev.field, ev.quote), ev)
    return list(seen.values())


def _run_end_symptom(finding: Finding, event: AgentEvent) -> bool:
    """A finding about how the run ended rather than a decision in it: done while
    an error stood unresolved, a final answer that reports an error or refuses,
    one that takes an error for a success, or a step limit the run ran into (what
    used the steps up is the decision: a repeated action, say)."""
    mode = finding.mode_id
    return (
        mode == "verification.premature_success"
        or mode == "planning.step_limit_exhausted"
        or (
            mode == "verification.invalid_final_output"
            and finding.metadata.get("answer") == ERROR_OR_REFUSAL
        )
        or (mode == "observation.error_ignored" and event.type is EventType.FINAL_ANSWER)
    )


def _decided_nothing(event: AgentEvent) -> bool:
    """A call that failed, or was stopped before it said anything (an integration's
    ``stopped``: a stream left unread, a cancel)."""
    return event.error is not None or (
        event.output is None and bool((event.metadata or {}).get("stopped"))
    )
