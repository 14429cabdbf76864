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

The error event of an exception is the run's own code's, not an agent's: it names
the run's agent where that is known (the one agent the run declared), and says it
came from the run (``metadata["by_the_run"]``), so a diagnosis names "planner", or
"the run's own code", instead of an unknown agent. So does the final answer a run
gives only to ``set_outcome`` (:func:`answer_of_outcome`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agentdebug.capture.encode import error_dict, jsonable
from agentdebug.schema import ErrorInfo, EventType, Outcome, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

# metadata of an event the run's own code gave rather than an agent it named (read
# by agentdebug.detect.signals): its value says what it is
BY_THE_RUN = "by_the_run"
RAISED = "an exception left the run's with block"
OUTCOME_ANSWER = "the final answer given to set_outcome"

_WHAT = {
    "GeneratorExit": "its caller closed the stream (or let go of it) before the end",
    "CancelledError": "it was cancelled",
    "KeyboardInterrupt": "Ctrl-C",
    "SystemExit": "the process was told to exit",
}


def ended_by(session: TraceSession, exc: BaseException) -> None:
    """Record how ``exc``, leaving the run's ``with`` block, ends the run."""
    if isinstance(exc, Exception):
        session.record(
            EventType.ERROR,
            agent_name=own_agent(session),
            error=exc,
            metadata={BY_THE_RUN: RAISED},
        )
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


def own_agent(session: TraceSession) -> str | None:
    """The agent the run's own code stands for, where it is known: the one agent
    the run declared (``agents=[...]``). With none or several, the run's code is no
    one agent's: a diagnosis calls it "the run's own code"."""
    agents = session.agents
    return agents[0].name if len(agents) == 1 else None


def answer_of_outcome(session: TraceSession) -> None:
    """The final answer of a run that succeeded, given only to ``set_outcome``:
    recorded as the run's ``final_answer`` event as the run ends (of its own agent,
    see :func:`own_agent`), so the rules read it as they read one recorded (an "All
    done" over a sub-run that failed is premature success either way). Not when a
    final answer was recorded, before or after ``set_outcome`` (that one is the
    run's answer), and not for a run that failed or whose end is unknown (its
    failure shows where it was found, not at an answer it gave up with). Never
    raises."""
    try:
        outcome = session.outcome
        if (
            outcome is None
            or outcome.status is not OutcomeStatus.SUCCESS
            or outcome.final_answer is None
            or session._answered
        ):
            return
        session.record(
            EventType.FINAL_ANSWER,
            agent_name=own_agent(session),
            output=outcome.final_answer,
            metadata={BY_THE_RUN: OUTCOME_ANSWER},
        )
    except Exception:
        log.exception("agentdebug: the answer of run %s could not be recorded", session.id)
