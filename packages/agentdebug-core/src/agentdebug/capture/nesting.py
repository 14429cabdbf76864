"""Runs recorded inside another run: a sub-agent's loop, an inner ``dbg.trace()``.

A run begun while another is being recorded in the same context (a ReAct
sub-agent called from an orchestrator's step, a helper traced on its own inside a
traced request) is that run's sub-run: its header names the run it is within
(``metadata["within_run"]``), which a rerun's ``parent_id`` is not (a sub-run is
not a branch), and when it ends, the run it is within records how it went, as an
event of the sub-run's agent: ``error`` with its failure when it declared or raised
one, else ``observation`` with its answer (``metadata["sub_run"]`` names it; see
:func:`report_to_outer`). So the
outer run's diagnosis sees the failure its sub-agent brought back, and the agent
that acted there, instead of an answer "All done" over two failed sub-runs, and a
handoff to an agent it never saw act.

A rerun's branch, and a run that continues another, are never sub-runs: they
belong to the run they rerun or continue.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agentdebug.schema import EventType, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession
    from agentdebug.schema import Outcome

log = logging.getLogger("agentdebug.capture")

WITHIN = "within_run"  # the metadata key naming the run a sub-run was recorded within
SUB_RUN = "sub_run"  # the metadata key of the outer run's event naming the sub-run
# the error type of a failure the sub-run declared (``set_outcome``), not raised
SUB_RUN_FAILED = "SubRunFailed"


def sub_agent(session: TraceSession) -> str:
    """The agent a sub-run stands for in the run it is within: the one its
    framework names (a LangGraph run: its graph), else the one that gave its final
    answer, else its first declared agent, else the last that acted (known without
    reading the run back: a JSON Lines store is read whole)."""
    if session._stands_for:
        return session._stands_for
    if isinstance(session._answer_agent, str) and session._answer_agent:
        return session._answer_agent
    if session.agents:
        return session.agents[0].name
    last = session._last_agent
    return last if isinstance(last, str) and last else "sub-run"


def report_to_outer(session: TraceSession, outcome: Outcome, *, inferred: bool) -> None:
    """``session`` (a sub-run) has ended with ``outcome``: the run it is within
    records it, if that run is still being recorded. Never raises.

    A failure the sub-run declared (``set_outcome``) or raised is an ``error`` of
    its agent; anything else is an ``observation`` of it (its answer, or how it
    stopped), which also resolves an earlier failure of that agent (a sub-agent
    called again, that then succeeded). A failure only inferred (errors and no
    final answer: a helper that got past its own error and answered nothing) is
    an observation too: the run never said it failed. A declared failure's error
    is its reason alone, of type ``SubRunFailed``: the diagnosis reads it as the
    sub-agent's failed task ("writer's run r1 failed: no sources found")."""
    outer = session._within
    if outer is None or outer.ended_at is not None:
        return
    try:
        agent = sub_agent(session)
        status = outcome.status
        answer = outcome.final_answer
        if answer is None:
            answer = session._final_answer
        meta: dict[str, Any] = {SUB_RUN: session.id, "sub_run_status": status.value}
        if session.goal:
            meta["sub_run_goal"] = session.goal
        if outcome.reason:
            meta["sub_run_reason"] = outcome.reason
        # begun in a LangGraph node: the node's step, under its start (else the next step)
        at = {
            k: session._within_at[k] for k in ("step_index", "parent_id") if k in session._within_at
        }
        if status is OutcomeStatus.FAILURE and not inferred:
            # a declared failure's message is its reason alone: the event names the
            # agent and the sub-run, and the diagnosis says "writer's run r1 failed:
            # no sources found" (it once read "...failed: writer's run r1: no sources found")
            error = outcome.error.model_dump() if outcome.error is not None else None
            declared = {"type": SUB_RUN_FAILED, "message": outcome.reason or "no reason given"}
            outer.record(
                EventType.ERROR,
                agent_name=agent,
                error=error or declared,
                output=answer,
                metadata=meta,
                **at,
            )
            return
        if answer is None and outcome.stopped_by:
            answer = f"[stopped: {outcome.reason or outcome.stopped_by}]"
        elif answer is None and status is OutcomeStatus.FAILURE:
            answer = f"[ended without an answer: {outcome.reason or 'no final answer'}]"
        outer.record(EventType.OBSERVATION, agent_name=agent, output=answer, metadata=meta, **at)
    except Exception:
        log.exception(
            "agentdebug: run %s could not be reported to the run it is within", session.id
        )
