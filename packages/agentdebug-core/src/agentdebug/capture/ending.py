"""How a run ends when an exception leaves its ``with`` block.

An ``Exception`` is the run's failure: recorded as an error event, the run marked
failed (even if it was marked a success before), the exception re-raised. Anything
else (``GeneratorExit`` from a stream its caller closed, dropped or broke out of,
``asyncio.CancelledError``, ``KeyboardInterrupt``) is the run's caller stopping it:
the run did not fail, it did not end. It is stored with outcome ``unknown`` and
``stopped_by`` naming what stopped it, and no error event, so a diagnosis with no
fault to find blames no one. An outcome the agent set itself as it was being
stopped (``set_outcome("unknown", stopped_by="the client disconnected")`` in an
``except GeneratorExit``) is kept. As the LangGraph plugin does for a graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentdebug.capture.encode import error_dict, jsonable
from agentdebug.schema import ErrorInfo, EventType, Outcome, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

_WHAT = {
    "GeneratorExit": "its caller closed the stream (or let go of it) before the end",
    "CancelledError": "it was cancelled",
    "KeyboardInterrupt": "Ctrl-C",
    "SystemExit": "the process was told to exit",
}


def ended_by(session: TraceSession, exc: BaseException) -> None:
    """Record how ``exc``, leaving the run's ``with`` block, ends the run."""
    if isinstance(exc, Exception):
        session.record(EventType.ERROR, error=exc)
        claimed = f" after it was marked {session.outcome.status.value}" if session.outcome else ""
        session.outcome = Outcome(
            status=OutcomeStatus.FAILURE,
            error=ErrorInfo.model_validate(error_dict(exc)),
            reason=f"the run raised an exception{claimed}",
        )
        return
    session.outcome = stopped(session.outcome, exc, session._final_answer)


def stopped(outcome: Outcome | None, exc: BaseException, final_answer: object) -> Outcome:
    """The outcome of a run ``exc`` stopped: the one the agent set, if it set one
    (given ``stopped_by`` when it is unknown and says nothing of it), else unknown."""
    name = type(exc).__name__
    if outcome is not None:
        if outcome.status is OutcomeStatus.UNKNOWN and not outcome.stopped_by:
            return outcome.model_copy(update={"stopped_by": name})
        return outcome
    what = _WHAT.get(name, "its caller stopped it")
    return Outcome(
        status=OutcomeStatus.UNKNOWN,
        final_answer=jsonable(final_answer),
        reason=f"the run was stopped before it ended: {what} ({name})",
        stopped_by=name,
    )
