"""A run read together with the runs it continues: one trajectory to diagnose and rerun.

A framework plugin records a run that picks up where another one stopped (the
resume of an interrupt served by another worker, a retry after an error) as a run
of its own that names the run it continues in ``metadata["continues"]``. The step
where such a run fails is its own, but the step that caused the failure is often
in the run before it: the wrong tool picked before the human's approval, the bad
plan before the crash that was retried. So the diagnosis and the closed loop read
a continuing run with its history: :func:`with_history` follows the links back
through the store and puts the runs' events in one trajectory, oldest first.

The joined trajectory keeps the latest run's id, outcome and links (a report on it
is a report on that run; a rerun branch is its branch), and says what it holds in
``metadata["joined"]``: the runs, oldest first, each with its steps. Runs that a
plugin records as continuations number their steps and events on from the run
they continue (see :class:`~agentdebug.capture.session.RunMark`), so the joined
view needs no renumbering; runs recorded otherwise have their steps moved after
the run before (``step_offset``) and colliding event ids prefixed with their run's
id (``<run>:<event>``), as the joined metadata says. A run that forked the history
of the run it continues, from before one of its steps
(``metadata["continues_before_step"]``: LangGraph's time travel), holds that run's
events before the step only: what it did from there on is a past the fork left.
"""

from __future__ import annotations

import logging
from typing import Any

from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentEvent, AgentInfo, AgentTrajectory, DiagnosticReport
from agentdebug.store.base import TraceStore, continues_before, continues_of

log = logging.getLogger("agentdebug.store")

HISTORY_LIMIT = 50  # runs read back at most, the latest included
JOINED = "joined"  # the metadata key of a joined trajectory


def continued_id(trajectory: AgentTrajectory) -> str | None:
    """The id of the run ``trajectory`` continues, if it names one."""
    return continues_of(trajectory.metadata)


def _joined_runs(trajectory: AgentTrajectory) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A joined trajectory's ``metadata["joined"]`` and its runs' entries (None
    for a trajectory that is not joined)."""
    joined = trajectory.metadata.get(JOINED)
    if not isinstance(joined, dict):
        return None
    return joined, [r for r in joined.get("runs", []) if isinstance(r, dict)]


def is_joined(trajectory: AgentTrajectory) -> bool:
    return _joined_runs(trajectory) is not None


def with_history(
    store: TraceStore | None, trajectory: AgentTrajectory, *, limit: int = HISTORY_LIMIT
) -> AgentTrajectory:
    """``trajectory`` with the events of the runs it continues before its own.

    A run that continues none (or a store that is not there) comes back as it is.
    A run of the chain that cannot be read (deleted, another store) ends the
    history there, said in ``metadata["joined"]["incomplete"]``, as is a chain
    longer than ``limit`` runs or one that comes back to a run already read."""
    if store is None or continued_id(trajectory) is None or is_joined(trajectory):
        return trajectory
    chain = [trajectory]
    incomplete: str | None = None
    seen = {trajectory.id}
    while True:
        before = continued_id(chain[-1])
        if before is None:
            break
        if before in seen:
            incomplete = (
                f"run {chain[-1].id} continues run {before}, which is already in the history"
            )
            break
        if len(chain) >= limit:
            incomplete = f"the history was cut at {limit} runs; run {chain[-1].id} continues more"
            break
        try:
            earlier = store.load_trajectory(before)
        except Exception as exc:  # the history is extra: a run it cannot read ends it
            why = str(exc) if isinstance(exc, AgentDebugError) else f"{type(exc).__name__}: {exc}"
            incomplete = f"run {chain[-1].id} continues run {before}, which cannot be read: {why}"
            break
        cut = continues_before(chain[-1].metadata)
        if cut is not None:  # a fork of its history: what that run did from the step on
            earlier = earlier.model_copy(update={"events": before_step(earlier.events, cut)})
        chain.append(earlier)
        seen.add(before)
    if incomplete is not None:
        log.warning("agentdebug: %s", incomplete)
    if len(chain) == 1:
        if incomplete is None:
            return trajectory
        return trajectory.model_copy(
            update={"metadata": {**trajectory.metadata, JOINED: _joined([], incomplete)}}
        )
    return _join(chain[::-1], incomplete)


def before_step(events: list[AgentEvent], step: int) -> list[AgentEvent]:
    """A run's events recorded before its first event of ``step`` or later: what a
    fork of its history from before that step keeps (not only the events with a
    smaller step: one filed under an earlier step, an error placed at the node it
    concerns, may have come after the fork point)."""
    for i, event in enumerate(events):
        if event.step_index >= step:
            return events[:i]
    return list(events)


def _join(runs: list[AgentTrajectory], incomplete: str | None) -> AgentTrajectory:
    """One trajectory of ``runs`` (oldest first), with the latest run's identity."""
    latest = runs[-1]
    taken = {e.id for e in latest.events}  # the latest run's ids stay as they are
    renamed: dict[str, dict[str, str]] = {}
    for run in runs[-2::-1]:  # newest to oldest: an earlier run gives way
        names = renamed[run.id] = {}
        for event in run.events:
            if event.id in taken:
                names[event.id] = f"{run.id}:{event.id}"
        taken.update(names.get(e.id, e.id) for e in run.events)
    events: list[AgentEvent] = []
    entries: list[dict[str, Any]] = []
    last = -1
    for run in runs:
        # Where the run's own numbering starts: its first event (an event filed
        # under a step of the run before, as a tool call under the model answer
        # that asked for it, may come later with a smaller step).
        first = run.events[0].step_index if run.events else last + 1
        offset = max(0, last + 1 - first)
        names = renamed.get(run.id, {})
        for event in run.events:
            events.append(_moved(event, offset, names) if offset or names else event)
        steps = [e.step_index + offset for e in run.events]
        entry: dict[str, Any] = {
            "run_id": run.id,
            "events": len(run.events),
            "first_step": first + offset if run.events else None,
            "last_step": max(steps, default=None),
            "status": run.outcome.status.value,
        }
        if offset:
            entry["step_offset"] = offset
        if names:
            entry["renamed_events"] = len(names)
        entries.append(entry)
        last = max(steps, default=last)
    agents: dict[str, AgentInfo] = {}
    for run in runs:
        for agent in run.agents:
            agents.setdefault(agent.name, agent)
    return latest.model_copy(
        update={
            "goal": latest.goal or next((r.goal for r in runs if r.goal), None),
            "reference_answer": latest.reference_answer
            or next((r.reference_answer for r in runs if r.reference_answer), None),
            "agents": list(agents.values()),
            "events": events,
            "started_at": runs[0].started_at or latest.started_at,
            "metadata": {**latest.metadata, JOINED: _joined(entries, incomplete)},
        }
    )


def _joined(entries: list[dict[str, Any]], incomplete: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": entries}
    if incomplete is not None:
        out["incomplete"] = incomplete
    return out


def _moved(event: AgentEvent, offset: int, names: dict[str, str]) -> AgentEvent:
    update: dict[str, Any] = {}
    if offset:
        update["step_index"] = event.step_index + offset
    if event.id in names:
        update["id"] = names[event.id]
    if event.parent_id is not None and event.parent_id in names:
        update["parent_id"] = names[event.parent_id]
    return event.model_copy(update=update) if update else event


def earlier_run_of(trajectory: AgentTrajectory, step: int | None) -> str | None:
    """The run before the latest that ``step`` of a joined trajectory belongs to
    (None for the latest run's own steps, or a trajectory not joined)."""
    found = _joined_runs(trajectory)
    if step is None or found is None:
        return None
    for r in found[1][:-1]:
        first, last = r.get("first_step"), r.get("last_step")
        if isinstance(first, int) and isinstance(last, int) and first <= step <= last:
            return str(r.get("run_id"))
    return None


def history_runs(trajectory: AgentTrajectory) -> list[str]:
    """The ids of the runs a joined trajectory holds, oldest first (none otherwise)."""
    found = _joined_runs(trajectory)
    return [str(r.get("run_id")) for r in found[1]] if found is not None else []


def made_on(report: DiagnosticReport, trajectory: AgentTrajectory) -> bool:
    """Whether ``report`` was made on this view of the run (the same runs read, so
    its steps and events name the same ones): a report on a run read alone does
    not fit the run read with its history, nor the reverse."""
    history = report.metadata.get("history")
    return (list(history) if isinstance(history, list) else []) == history_runs(trajectory)


def history_note(trajectory: AgentTrajectory) -> str | None:
    """A line for a report on a joined trajectory: which runs it read."""
    found = _joined_runs(trajectory)
    if found is None:
        return None
    joined, runs = found
    parts = []
    for r in runs[:-1]:
        where = ""
        if r.get("first_step") is not None:
            where = f" (steps {r['first_step']}-{r['last_step']})"
        parts.append(f"{r.get('run_id')}{where}")
    note = ""
    if parts:
        note = (
            f"run {trajectory.id} continues an earlier run; diagnosed together with "
            + ", ".join(parts)
            + " before it"
        )
    if joined.get("incomplete"):
        note = (note + "; " if note else "") + f"history incomplete: {joined['incomplete']}"
    return note or None
