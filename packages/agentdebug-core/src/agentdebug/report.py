"""Renderers for reports and runs: traceback-style text, Markdown, JSON.

The text form reads like a Python traceback turned inside out: the run's steps in
order, the root-cause step and the symptom step marked, and one line at the bottom
naming the failure. Long runs are elided around the steps that matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.attribute.heuristic import DEFAULT_GUESS
from agentdebug.detect.signals import CACHED, DECISION_TYPES, RESULT_TYPES, sub_run_failure
from agentdebug.plugins import Registry, get_registry
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    DiagnosticReport,
    EventType,
    Evidence,
    Hypothesis,
    Severity,
)
from agentdebug.store.base import continues_before, continues_of
from agentdebug.store.history import earlier_run_of, history_runs
from agentdebug.text import compact_json, flatten, shorten, visible
from agentdebug.views._inline import call_text, inline

if TYPE_CHECKING:
    from agentdebug.store.base import RunSummary

FORMATS = ("text", "json", "jsonl", "md")


def render(
    report: DiagnosticReport, trajectory: AgentTrajectory, fmt: str = "text", *, width: int = 100
) -> str:
    if fmt == "text":
        return render_text(report, trajectory, width=width)
    if fmt == "md":
        from agentdebug.report_md import render_markdown  # (it uses this module's pieces)

        return render_markdown(report, trajectory)
    if fmt == "json":
        return render_json(report)
    if fmt == "jsonl":  # (one line a report, however many runs: for jq and line tools)
        return orjson.dumps(report.model_dump(mode="json")).decode()
    raise ValueError(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")


def render_json(report: DiagnosticReport) -> str:
    return orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()


# -- shared pieces ---------------------------------------------------------------------


# a model call or a tool run stopped before it answered (an integration's ``stopped``)
_MAY_STOP = (EventType.LLM_RESPONSE, EventType.TOOL_RESULT)


def event_line(event: AgentEvent, width: int) -> str:
    """One line of what happened at an event: its error, else its output, else its
    input; a tool call as ``tool(arguments)``, a model call or a tool run stopped
    before it answered as such (not its prompt, which would read as its reply)."""
    meta = event.metadata or {}
    if event.error is not None:
        error = "✗ " + event.error.message
        delegated = sub_run_failure(event)  # a sub-agent's run that failed (capture.nesting)
        if delegated is not None:
            error = f"✗ run {meta['sub_run']} failed: {delegated[1]}"
        if event.type is EventType.TOOL_CALL and event.input is not None:
            # what it was called with beside why it failed (the error keeps half the room)
            call = shorten(call_text(_tool_of(event), event.input), max(20, width // 2))
            return shorten(f"{call} {error}", width)
        return shorten(error, width)
    if event.type is EventType.TOOL_CALL and event.input is not None:
        line = call_text(_tool_of(event), event.input)
        if meta.get("edited") and meta.get("asked_args") is not None:  # (by a person)
            line += f" [edited: the model asked {compact_json(meta['asked_args'])}]"
        return shorten(line, width)
    if event.type is EventType.USER_INPUT and meta.get("replayed_from"):
        # a rerun branch given the original human's answer (not a person, now)
        head = "[replayed: the original run's answer"
        if meta.get("question_matches") is False:
            asked = flatten(meta.get("original_question"), limit=width)
            head += f", given to another question; it answered: {asked}"
        said = flatten(event.input, limit=width * 2)
        return shorten(f"{head}] {said}" if said else f"{head}]", width)
    out = event.output
    stopped = meta.get("stopped") if event.type in _MAY_STOP else None
    if stopped and isinstance(stopped, str):
        said = inline(out, limit=width * 4)
        head = f"[stopped: {stopped}]"
        return shorten(f"{head} {said}" if said else head, width)
    commands = out if isinstance(out, list) and out and all(map(_is_command, out)) else None
    if _is_command(out):
        commands = [out]
    if commands:  # a routing command, as integrations record one (or a node's list of them)
        return shorten("; ".join(_command_text(c, width) for c in commands), width)
    # keys, nulls and tool calls kept (not the bare values: {"ok": true, "count": 0}
    # read "True 0", and {"price": null} nothing at all)
    text = inline(out, limit=width * 4) or inline(event.input, limit=width * 4)
    return shorten(text, width) if text else ""


def event_lines(event: AgentEvent, width: int) -> list[str]:
    """:func:`event_line`, but a failed tool call on two lines: what it was called
    with, then why it failed, each whole up to ``width``."""
    if event.error is not None and event.type is EventType.TOOL_CALL and event.input is not None:
        call = call_text(_tool_of(event), event.input)
        return [shorten(call, width), shorten("✗ " + event.error.message, width)]
    line = event_line(event, width)
    return [line] if line else []


def _tool_of(event: AgentEvent) -> str | None:
    tool = (event.metadata or {}).get("tool_name") or event.module
    return tool if isinstance(tool, str) and tool else None


def _is_command(value: object) -> bool:
    return isinstance(value, dict) and value.get("command") is True


def _command_text(command: dict[str, object], width: int) -> str:
    goto = flatten(command.get("goto"), limit=width)
    update = flatten(command.get("update"), limit=width * 4)
    return f"command{' → ' + goto if goto else ''}: {update}"


def _mode_name(mode_id: str | None, reg: Registry) -> str:
    if not mode_id:
        return "unclassified"
    mode = reg.failure_modes.get(mode_id)
    return f"{mode.name} ({mode_id})" if mode else mode_id


def _evidence_line(ev: Evidence, width: int) -> str:
    """One piece of evidence: where, the quote, and whether the trace holds it."""
    where = f"step {ev.step_index}" if ev.step_index is not None else (ev.event_id or "trace")
    field = f" {ev.field}" if ev.field else ""
    quote = f' "{shorten(ev.quote, width)}"' if ev.quote else ""
    if ev.grounded is True:
        tag = f" [grounded: {ev.match}]" if ev.match and ev.match != "exact" else " [grounded]"
    elif ev.grounded is False:
        tag = " [NOT FOUND in trace]"
    else:
        tag = ""
    note = ev.note or ""
    # Only the notes a reader needs: where a quote really was, or what it means.
    shown = [n for n in note.split("; ") if n and ("found at" in n or not ev.match)]
    extra = f" ({'; '.join(shown)})" if shown else ""
    if ev.after_blamed_step:
        tag += " [after the blamed step]"
    return f"{where}{field}:{quote}{extra}{tag}"


def _selected_positions(
    trajectory: AgentTrajectory, report: DiagnosticReport, context: int = 1
) -> list[int]:
    """Which events to show: a short run whole; else first and last, every finding,
    each hypothesis with context (its neighbours in step order, as :func:`timeline`
    shows them), and, where the root cause is a default guess, every decision, or
    the first and the last twenty of a longer run's (the reader has to judge the
    steps themselves: a guess cannot say which one)."""
    events = trajectory.events
    order = trajectory.step_order()
    if len(order) <= WHOLE_RUN:
        return sorted(order)
    marked = {f.event_id for f in report.findings} | {h.event_id for h in report.hypotheses[:3]}
    keep = {order[0], order[-1]} if order else set()
    for rank, i in enumerate(order):
        if events[i].id in marked:
            keep.update(order[max(0, rank - context) : rank + context + 1])
    # what the agents were told (tools' results, a person's input): the evidence a
    # reader checks a blame against, where the run holds few enough to show
    told = [i for i in order if events[i].type in _TOLD]
    if len(told) <= TOLD_SHOWN:
        keep.update(told)
    root = report.root_cause
    if root is not None and root.metadata.get(DEFAULT_GUESS):  # (the first and the last)
        decided = [i for i in order if events[i].type in DECISION_TYPES]
        half = DECISIONS_SHOWN // 2
        keep.update(
            decided if len(decided) <= DECISIONS_SHOWN else decided[:half] + decided[-half:]
        )
    return sorted(keep)


_TOLD = RESULT_TYPES | {EventType.USER_INPUT}
TOLD_SHOWN = 12  # a run's results and inputs shown whole when it holds no more
WHOLE_RUN = 30  # events of a run shown whole (a short run elided hid the step to see)
DECISIONS_SHOWN = 40  # decisions shown beside a default guess (half first, half last)


def timeline(
    trajectory: AgentTrajectory,
    *,
    width: int = 100,
    positions: Iterable[int] | None = None,
    marks: dict[str, list[str]] | None = None,
    checkpoints: bool = False,
) -> list[str]:
    """The run's events (``positions``: those of them to show) in step order
    (:meth:`AgentTrajectory.step_order`), one or two lines each (with
    ``checkpoints``, a third for the framework state an event started from);
    skipped stretches are summarised."""
    events = trajectory.events
    order = trajectory.step_order()
    if positions is not None:
        wanted = set(positions)
        chosen = [rank for rank, i in enumerate(order) if i in wanted]
    else:
        chosen = list(range(len(order)))
    marks = marks or {}
    name_w = min(24, max([len(visible(e.agent_name or "-")) for e in events] + [5]))
    step_w = max([len(str(e.step_index)) for e in events] + [3])  # (a long run's steps)
    lines: list[str] = []
    previous = -1
    asked = _questions(events)
    for rank in chosen:
        if rank - previous > 1:
            lines.append(f"      ... {rank - previous - 1} event(s) not shown ...")
        previous = rank
        event = events[order[rank]]
        tags = marks.get(event.id, [])
        arrow = "→" if tags else " "
        name = visible(event.agent_name or "-")[:name_w]
        head = f"{arrow} [{event.step_index:>{step_w}}] {name:<{name_w}}  {event.type.value}"
        if tags:
            head += "   ← " + ", ".join(tags)
        if event.metadata.get(CACHED) is True:
            head += "   (served from cache)"
        lines.append(head)
        lines += [f"        {body}" for body in event_lines(event, width - 10)]
        for answered in _answering(event, asked):  # (a line each: none cut off)
            lines.append(f"        answering: {shorten(answered, width - 21)}")
        ref = event.checkpoint
        if checkpoints and ref is not None:
            where = f" in thread {ref.thread_id}" if ref.thread_id else ""
            if ref.namespace:
                where += f", namespace {ref.namespace}"
            lines.append(f"        checkpoint {ref.checkpoint_id}{where}")
    return lines


def _questions(events: list[AgentEvent]) -> dict[str, Any]:
    """Interrupt id -> the question asked with it (an interrupt event's
    ``interrupt_ids``, beside its output's values, in order)."""
    out: dict[str, Any] = {}
    for event in events:
        ids = event.metadata.get("interrupt_ids")
        if isinstance(ids, list) and isinstance(event.output, list):
            out.update((str(i), q) for i, q in zip(ids, event.output, strict=False))
    return out


def _answering(event: AgentEvent, asked: dict[str, Any]) -> list[str]:
    """For a resume keyed by interrupt ids: which question each answer went to."""
    given = event.input
    if event.type is not EventType.USER_INPUT or not isinstance(given, dict) or not given:
        return []
    if not all(str(k) in asked for k in given):
        return []
    return [
        f"{flatten(asked[str(k)], limit=80)} = {flatten(v, limit=40)}" for k, v in given.items()
    ]


# -- text ------------------------------------------------------------------------------


def render_text(report: DiagnosticReport, trajectory: AgentTrajectory, *, width: int = 100) -> str:
    reg = get_registry()
    status = trajectory.outcome.status.value
    out = [
        f"Diagnosis of run {trajectory.id}"
        + (f' "{shorten(trajectory.goal, 60)}"' if trajectory.goal else "")
        + f" ({trajectory.framework or 'unknown framework'}, {status}, {len(trajectory.events)} events"
        + _with_runs(trajectory)
        + ")",
        "",
        "Run (most recent step last):",
    ]
    marks: dict[str, list[str]] = {}
    root = report.root_cause
    if root is not None and root.event_id:
        guess = root.metadata.get(DEFAULT_GUESS)
        marks.setdefault(root.event_id, []).append("a guess" if guess else "root cause")
    if report.symptom is not None and report.symptom.event_id:
        marks.setdefault(report.symptom.event_id, []).append("failure shows here")
    for f in report.findings:
        if f.event_id and f.event_id not in marks:
            # (an error a retry or a handler got past is on record, not a fault)
            marks[f.event_id] = [
                f"{f.mode_id}, resolved" if f.severity is Severity.INFO else f.mode_id
            ]
    out += timeline(
        trajectory, width=width, positions=_selected_positions(trajectory, report), marks=marks
    )
    out.append("")
    if root is not None:
        title = (
            "Root cause (a default guess: no rule located it)"
            if root.metadata.get(DEFAULT_GUESS)
            else "Root cause"
        )
        out += _hypothesis_block(title, root, reg, width, by_line(report, root))
        acting = _acting_note(root)
        if acting:
            out.append(f"    note: {acting}")
        earlier = earlier_run_of(trajectory, root.step_index)
        if earlier is not None:
            out.append(f"    in run {earlier}, which this run continues")
    else:
        out.append(f"Root cause: none named ({_why_no_root(report)})")
    if report.fix is not None:
        out.append(f"Fix: {report.fix.directive}")
    verified = verification_line(report)
    if verified:
        out.append(verified)
    out += _lifecycle_lines(root, width)
    others = report.hypotheses[1:4]
    if others:
        out.append("Also considered:")
        for h in others:
            out.append(
                f"    {_who(h, '-')} at step {h.step_index} — {_mode_name(h.mode_id, reg)}, "
                f"confidence {h.confidence:.2f}"
            )
    if report.findings:
        out.append(f"Findings ({len(report.findings)}):")
        for f in report.findings[:20]:
            out.append(
                f"    step {f.step_index} {f.agent_name or '-'}: {f.mode_id} ({f.confidence:.2f}) "
                f"{shorten(f.message, width - 30)}"
            )
        if len(report.findings) > 20:
            out.append(f"    ... and {len(report.findings) - 20} more")
    cost = report.cost
    out.append(
        f"Cost: {cost.calls} model call(s), {cost.input_tokens} input and {cost.output_tokens} output tokens"
        + cached_part(report)
    )
    said = _why_no_root(report) if root is None else None
    for note in report.notes:
        if note != said:  # (said already, as why no root cause is named)
            out.append(f"Note: {note}")
    out.append("")
    out.append(_last_line(report, reg, width))
    return shown(out)


def cached_part(report: DiagnosticReport) -> str:
    """What the response cache answered, as a clause of the cost line (or nothing)."""
    cost = report.cost
    if not cost.cached_calls:
        return ""
    return (
        f" (+{cost.cached_calls} answered from the cache: {cost.cached_input_tokens} "
        f"input and {cost.cached_output_tokens} output tokens not spent again)"
    )


def _why_no_root(report: DiagnosticReport) -> str:
    """Why a report names no root cause, as its audit says: attribution skipped
    (nothing failed) or an attributor that gave no answer; else what was missing."""
    for entry in reversed(report.audit):
        if entry.outcome in ("skipped", "no-answer") and entry.detail:
            return entry.detail
    if not report.findings:
        return "no finding and no structural candidate"
    tried = [e.strategy for e in report.audit if e.stage == "attribute"]
    by = f"the {tried[-1]} attributor" if tried else "attribution"
    return f"{by} named no step from these findings"


def _with_runs(trajectory: AgentTrajectory) -> str:
    earlier = history_runs(trajectory)[:-1]
    if not earlier:
        return ""
    return f", with the {len(earlier)} run{'s' if len(earlier) > 1 else ''} it continues"


def _model_of(report: DiagnosticReport, h: Hypothesis) -> str | None:
    """The model whose calls made ``h``: the one its strategy's model calls used,
    as the audit recorded them (None for a strategy that called no model). The
    router's root cause (``auto:all-at-once+step-by-step``) is made by the
    strategies it names."""
    names = {h.strategy}
    _, routed, strategies = h.strategy.partition(":")
    if routed:
        names.update(strategies.split("+"))
    models = [a.model for a in report.audit if a.stage == "llm" and a.strategy in names and a.model]
    return models[-1] if models else None


def by_line(report: DiagnosticReport, h: Hypothesis) -> str:
    """Who named ``h``: ``deepdebug, model gpt-4o``, or a strategy alone (no model)."""
    model = _model_of(report, h)
    return f"{h.strategy}, model {model}" if model else h.strategy


def _acting_note(h: Hypothesis) -> str | None:
    """Who acted at a blamed step a model named another for; the decision behind a tool output."""
    acting = h.metadata.get("agent_acting_at_step")
    decided = h.metadata.get("decision_step")
    if not acting and isinstance(decided, int) and not isinstance(decided, bool):
        return (
            f"step {h.step_index} is a tool's output; {h.agent_name or 'the agent'} decided "
            f"it at step {decided}, which the fix is for"
        )
    if not acting:
        return None
    return (
        f"at step {h.step_index} it was {acting} that acted, not "
        f"{h.agent_name or 'the agent named'}"
    )


def _who(h: Hypothesis, unknown: str = "unknown agent") -> str:
    """Whom a hypothesis blames: its agent, the run's input, the run's own code
    (named so by the diagnosis), or ``unknown``."""
    if h.agent_name:
        return h.agent_name
    if h.metadata.get("blames_input"):
        return "the run's input"
    own = h.metadata.get("blames_run_code")
    return own if isinstance(own, str) and own else unknown


def _hypothesis_block(title: str, h: Hypothesis, reg: Registry, width: int, by: str) -> list[str]:
    lines = [
        f"{title}: {_who(h)} at step {h.step_index} — "
        f"{_mode_name(h.mode_id, reg)}, confidence {h.confidence:.2f} (by {by})"
    ]
    if h.rationale:
        lines.append(f"    why: {shorten(h.rationale, width * 2)}")
    for ev in h.evidence[:4]:
        lines.append(f"    evidence: {_evidence_line(ev, width - 30)}")
    return lines


def _instances(root: Hypothesis | None) -> list[dict[str, object]]:
    raw = root.metadata.get("instances") if root is not None else None
    return [i for i in raw if isinstance(i, dict)] if isinstance(raw, list) else []


def _lifecycle_lines(root: Hypothesis | None, width: int) -> list[str]:
    """Every error instance error-lifecycle tracking saw, with its state."""
    instances = _instances(root)
    if not instances:
        return []
    lines = [
        f"Error lifecycle ({len(instances)} instance(s); only costly and active ones were candidates):"
    ]
    for inst in instances:
        lines.append(
            f"    {inst.get('id')} [{inst.get('state')}] from step {inst.get('first_step')} "
            f"({inst.get('agent') or '-'}), {inst.get('object')}: "
            f"{shorten(str(inst.get('description') or ''), width - 40)}"
        )
    return lines


def _last_line(report: DiagnosticReport, reg: Registry, width: int) -> str:
    symptom = report.symptom
    if symptom is None:
        root = report.root_cause
        if root is None:
            return "NoFailureFound: no detector reported an error in this run"
        # a root cause a model named where no rule found anything: not "no failure"
        name = _title(root.mode_id, reg) if root.mode_id else "RootCause"
        return (
            f"{name}: {_who(root)} at step {root.step_index}, named by "
            f"{by_line(report, root)} (no detector's rule reported an error in this run)"
        )
    if symptom.detector == "outcome":  # the run's own verdict on its answer
        return f"RunFailed: {shorten(symptom.message, width)}"
    return f"{_title(symptom.mode_id, reg)}: {shorten(symptom.message, width)}"


def _title(mode_id: str, reg: Registry) -> str:
    """A failure mode's name as an exception's: ``MalformedToolCall``."""
    mode = reg.failure_modes.get(mode_id)
    return "".join(
        w.capitalize() for w in (mode.name if mode else mode_id).replace("-", " ").split()
    )


def verification_line(report: DiagnosticReport) -> str | None:
    """What a rerun said about the root cause, or None when none was tried."""
    v = report.verification
    if v is None:
        return None
    if v.status == "verified_by_rerun":
        return (
            f"Root cause verified by rerun: branch {v.branch_id} corrected step "
            f"{v.resume_step} alone and succeeded."
        )
    where = f"branch {v.branch_id}" if v.branch_id else "the rerun"
    if v.branch_passed:  # (the blamed step decided as before: a later one made the pass)
        return f"Root cause not confirmed by rerun: {where} passed, but {v.detail}."
    return f"Root cause not confirmed by rerun: {where} did not succeed ({v.detail})."


def render_run(
    trajectory: AgentTrajectory,
    *,
    width: int = 100,
    reports: Sequence[DiagnosticReport] = (),
    branches: Sequence[RunSummary] = (),
) -> str:
    """`agentdebug show`: the run's header and its whole timeline."""
    out = [
        f"Run {trajectory.id}",
        f"  goal:      {visible(trajectory.goal or '—')}",
        f"  framework: {visible(trajectory.framework or '—')}",
        f"  outcome:   {trajectory.outcome.status.value}"
        + (f" ({visible(trajectory.outcome.reason)})" if trajectory.outcome.reason else ""),
        f"  agents:    {visible(', '.join(trajectory.agent_names())) or '—'}",
        f"  events:    {len(trajectory.events)}",
    ]
    out += _instructions(trajectory, width)
    if trajectory.parent_id:
        branch = trajectory.metadata.get("branch")
        where = ""
        if isinstance(branch, dict) and branch.get("resume_step") is not None:
            patch = branch.get("state_patch")
            said = branch.get("directive") or (
                f"a state patch, {shorten(compact_json(patch), 80)}"
                if patch
                else "no directive given, a retry"
            )
            where = f" (rerun from step {branch['resume_step']}: {said})"
        out.append(f"  branch of: {trajectory.parent_id}{where}")
    within = trajectory.metadata.get("within_run")  # a sub-run (capture.nesting)
    if isinstance(within, str):
        out.append(f"  within:    {within} (recorded inside that run, which holds how it went)")
    continues = continues_of(trajectory.metadata)  # a run picked up after it stopped
    if continues is not None:
        cut = continues_before(trajectory.metadata)
        how = (
            f"forked from before its step {cut}"
            if cut is not None
            else "picked up where that run stopped"
        )
        out.append(f"  continues: {continues} ({how})")
    marks: dict[str, list[str]] = {}
    if reports:
        latest = reports[-1]
        out.append(f"  diagnosis: {latest.summary}")
        verified = verification_line(latest)
        if verified:
            out.append(f"  {verified}")
        root = latest.root_cause
        if root is not None:
            out.append(f"  named by:  {by_line(latest, root)}")
            unfound = sum(1 for ev in root.evidence if ev.grounded is False)
            if unfound:
                out.append(
                    f"  evidence:  {unfound} of its {len(root.evidence)} quote(s) not found "
                    "in the trace"
                )
        if latest.fix is not None:
            out.append(f"  fix:       {shorten(latest.fix.directive, width - 13)}")
        if root and root.event_id:  # (a default guess said to be one, as diagnose says it)
            marks[root.event_id] = ["a guess" if root.metadata.get(DEFAULT_GUESS) else "root cause"]
            if latest.metadata.get("history") and trajectory.event(root.event_id) is None:
                out.append(  # diagnosed with the runs this one continues
                    f"  root cause at step {root.step_index}, in a run this one continues "
                    f"(agentdebug show {trajectory.id} --history)"
                )
    for branch in reversed(branches):  # oldest first
        out.append(f"  rerun:     branch {branch.id} ({branch.status})")
    out.append("")
    out += timeline(trajectory, width=width, marks=marks, checkpoints=True)
    return shown(out)


def _instructions(trajectory: AgentTrajectory, width: int) -> list[str]:
    """The agents' instructions (a system prompt), one line each, cut to the width:
    the same text given to every agent is shown once."""
    given = {a.name: a.instructions for a in trajectory.agents if a.instructions}
    room = max(20, width - 26)
    texts = set(given.values())
    if len(texts) == 1 and len(given) == len(trajectory.agents) > 1:  # (everyone's)
        (text,) = texts
        return [f"  instructions: {shorten(text, room)}"]
    return [f"  instructions ({name}): {shorten(text, room)}" for name, text in given.items()]


def shown(lines: Iterable[str]) -> str:
    """The lines as one text for a terminal: any control character a recorded
    string carried (a bell, an escape sequence) written as an escape."""
    return "\n".join(visible(part) for line in lines for part in line.split("\n"))
