"""Helpers every rerun executor uses to record its branch the same way.

A branch is a full trajectory: it starts with a copy of the original's events
before the resume step (so it can be read, diagnosed and rerun again on its own),
then holds what the rerun did. It points at its parent with ``parent_id`` and
``branch_from_event_id``, and ``metadata['branch']`` says where it resumed, with
which directive, on whose plan.
"""

from __future__ import annotations

import threading
from typing import Any

from agentdebug.capture.debugger import AgentDebug
from agentdebug.capture.session import TraceSession
from agentdebug.schema import AgentEvent, AgentTrajectory, RerunRequest
from agentdebug.store.base import CONTINUES
from agentdebug.store.history import JOINED

_debuggers: dict[str, AgentDebug] = {}
_lock = threading.Lock()
# the branch each rerun began, by the request's run, report and round: the loop asks
# for it when the rerun was stopped before the executor could hand it back
_started: dict[tuple[str, str | None, int], str] = {}
_STARTED_KEPT = 256  # (an executor run without the loop: the oldest are let go)


def branch_debugger(request: RerunRequest, fallback: AgentDebug | None = None) -> AgentDebug:
    """The debugger an executor records its branch with: one on the store the loop
    named in the request (so the branch lands beside the original), else
    ``fallback``, else the default store. One per store location per process."""
    if request.store is None:
        return fallback or AgentDebug()
    opened = fallback._store if fallback is not None else None  # never open one just to compare
    if fallback is not None and opened is not None and opened.location == request.store:
        return fallback
    with _lock:
        dbg = _debuggers.get(request.store)
        if dbg is None:
            dbg = _debuggers[request.store] = AgentDebug(request.store)
        return dbg


def inherited_events(trajectory: AgentTrajectory, resume_step: int) -> list[AgentEvent]:
    """The events a branch keeps from its parent: every one before the resume step."""
    return [e for e in trajectory.events if e.step_index < resume_step]


def checkpoint_before(trajectory: AgentTrajectory, resume_step: int) -> AgentEvent | None:
    """The latest event carrying a checkpoint taken at or before the start of the
    resume step: the state to restore so that the step is redone."""
    found = None
    for event in trajectory.events:
        if event.checkpoint is None:
            continue
        if event.step_index <= resume_step:
            found = event
        else:
            break
    return found


RUN_LINKS = (CONTINUES,)  # metadata naming another run this one relates to
# metadata of a view of the run rather than of the run: a branch forked from a run
# read with its history (store.history) is a run of its own, continuing none
VIEW_KEYS = (JOINED,)


def start_branch(
    debugger: AgentDebug,
    request: RerunRequest,
    *,
    framework: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> TraceSession:
    """A trace session for the branch, already holding the inherited events.

    Use it as the context manager of the rerun; the executor records what the
    rerun does into it, then returns ``session.trajectory()``."""
    original = request.trajectory
    resume = request.resume_event
    # the original's metadata, but its links: a branch is a rerun of the original,
    # not a run that picked up where another stopped
    kept = {k: v for k, v in original.metadata.items() if k not in RUN_LINKS + VIEW_KEYS}
    meta = {**kept, **(metadata or {}), "branch": request.branch_metadata()}
    session = debugger.trace(
        original.goal,
        framework=framework or original.framework,
        agents=list(original.agents),
        reference_answer=original.reference_answer,
        parent_id=original.id,
        metadata=meta,
        branch_from_event_id=resume.id if resume is not None else None,
    )
    for event in inherited_events(original, request.resume_step):
        session.record_event(event, metadata={"inherited_from": original.id})
    with _lock:
        _started[_started_key(request)] = session.id
        while len(_started) > _STARTED_KEPT:
            del _started[next(iter(_started))]
    return session


def _started_key(request: RerunRequest) -> tuple[str, str | None, int]:
    # (not the request itself: an executor may fork from a copy, resumed elsewhere)
    return request.trajectory.id, request.report_id, request.attempt


def started_branch(request: RerunRequest) -> str | None:
    """The id of the branch :func:`start_branch` began for ``request``, if any (and
    forgets it): what a rerun stopped before it returned (Ctrl-C) left in the store."""
    with _lock:
        return _started.pop(_started_key(request), None)
