"""The Markdown form of a report (``agentdebug diagnose --format md``): a table of
the root cause and the candidates, the evidence, the fix, the findings and the
cost, for an issue or a pull request. Built from the text renderer's pieces."""

from __future__ import annotations

from agentdebug.attribute.heuristic import DEFAULT_GUESS
from agentdebug.plugins import get_registry
from agentdebug.report import (
    _acting_note,
    _evidence_line,
    _instances,
    _mode_name,
    _who,
    _why_no_root,
    _with_runs,
    by_line,
    cached_part,
    shown,
    verification_line,
)
from agentdebug.schema import AgentTrajectory, DiagnosticReport
from agentdebug.store.history import earlier_run_of
from agentdebug.text import shorten


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: DiagnosticReport, trajectory: AgentTrajectory) -> str:
    reg = get_registry()
    root = report.root_cause
    out = [
        f"# Diagnosis of run `{trajectory.id}`",
        "",
        # (one line each: a goal's own newline would end the list, a "# ..." line in it
        # become a heading)
        f"- **Goal:** {' '.join((trajectory.goal or '—').split())}",
        f"- **Framework:** {' '.join((trajectory.framework or '—').split())}",
        f"- **Outcome:** {trajectory.outcome.status.value}",
        f"- **Events:** {len(trajectory.events)}{_with_runs(trajectory)}",
        f"- **Tier:** {report.tier} (attributor `{report.attributor}`)",
        "",
        "## Summary",
        "",
        report.summary or "—",
        "",
        "## Root cause",
        "",
    ]
    if root is not None and root.metadata.get(DEFAULT_GUESS):
        out += ["A default guess: no rule located the cause.", ""]
    if root is None:
        out.append(f"None named ({_why_no_root(report)}).")
    else:
        out += [
            f"**{_who(root)}** at **step {root.step_index}** — "
            f"{_mode_name(root.mode_id, reg)}, confidence {root.confidence:.2f} "
            f"(by {by_line(report, root)})",
            "",
            root.rationale or "",
        ]
        acting, earlier = _acting_note(root), earlier_run_of(trajectory, root.step_index)
        if acting:
            out += ["", f"Note: {acting}."]
        if earlier is not None:
            out += ["", f"Step {root.step_index} is in run `{earlier}`, which this run continues."]
        if root.evidence:
            out += ["", "Evidence:", ""]
            out += [f"- {_md_cell(_evidence_line(ev, 160))}" for ev in root.evidence]
    if report.fix is not None:
        out += ["", "## Fix", "", report.fix.directive]
    verified = verification_line(report)
    if verified:
        out += ["", f"**{verified}**"]
    instances = _instances(root)
    if instances:
        out += [
            "",
            "## Error lifecycle",
            "",
            "| id | state | first step | agent | object | description |",
            "|---|---|---|---|---|---|",
        ]
        for inst in instances:
            out.append(
                f"| {inst.get('id')} | {inst.get('state')} | {inst.get('first_step')} "
                f"| {_md_cell(str(inst.get('agent') or '—'))} | {_md_cell(str(inst.get('object')))} "
                f"| {_md_cell(shorten(str(inst.get('description') or ''), 160))} |"
            )
    out += ["", "## Hypotheses", ""]
    if report.hypotheses:
        out += [
            "| rank | agent | step | mode | confidence | strategy |",
            "|---|---|---|---|---|---|",
        ]
    else:
        out.append("None.")  # (not an empty table)
    for rank, h in enumerate(report.hypotheses, start=1):
        out.append(
            f"| {rank} | {_md_cell(_who(h, '—'))} | {h.step_index} | {h.mode_id or '—'} "
            f"| {h.confidence:.2f} | {_md_cell(by_line(report, h))} |"
        )
    out += ["", "## Findings", ""]
    if report.findings:
        out += ["| step | agent | mode | confidence | message |", "|---|---|---|---|---|"]
    else:
        out.append("None: no rule found a failure.")
    for f in report.findings:
        out.append(
            f"| {f.step_index} | {_md_cell(f.agent_name or '—')} | {f.mode_id} | {f.confidence:.2f} "
            f"| {_md_cell(shorten(f.message, 160))} |"
        )
    out += [
        "",
        "## Cost",
        "",
        f"{report.cost.calls} model call(s), {report.cost.input_tokens} input tokens, "
        f"{report.cost.output_tokens} output tokens{cached_part(report)}.",
    ]
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return shown(out) + "\n"  # (recorded control characters as escapes, as in the text)
