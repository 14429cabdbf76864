"""A tiny agent with a real rerun executor, for the closed-loop tests.

The researcher's decision at step 1 is decisive: it searches for the largest city
instead of the capital, the tool refuses, and the writer answers anyway. A rerun
that resumes at step 1 or earlier with a directive searches for the capital and
succeeds; one that resumes later cannot undo the error and fails again.
"""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug, EventType
from agentdebug.rerun import branch_debugger, start_branch
from agentdebug.schema import AgentTrajectory, OutcomeStatus, RerunRequest

GOAL = "Name the capital of Australia."
DECISIVE_STEP = 1


def _steps(t: Any, start: int, corrected: bool) -> None:
    if start <= 0:
        t.record(
            EventType.PLAN,
            agent_name="planner",
            step_index=0,
            output="Find the capital with the city_search tool, then answer.",
        )
    if start <= 1:
        query = "capital of Australia" if corrected else "largest city of Australia"
        t.record(
            EventType.TOOL_CALL,
            agent_name="researcher",
            step_index=1,
            module="city_search",
            input={"tool": "city_search", "query": query},
        )
    if corrected and start <= 1:
        t.record(EventType.TOOL_RESULT, agent_name="city_search", step_index=2, output="Canberra")
        t.record(EventType.FINAL_ANSWER, agent_name="writer", step_index=3, output="Canberra")
        t.set_outcome(OutcomeStatus.SUCCESS, final_answer="Canberra")
        return
    if start <= 2:
        t.record(
            EventType.TOOL_RESULT,
            agent_name="city_search",
            step_index=2,
            error="city_search: 'largest city of Australia' is not a capital query",
        )
    t.record(EventType.FINAL_ANSWER, agent_name="writer", step_index=3, output="Sydney")
    t.set_outcome(OutcomeStatus.FAILURE, final_answer="Sydney", reason="wrong city")


def failing_run(dbg: AgentDebug, *, reference: bool = True) -> AgentTrajectory:
    with dbg.trace(
        GOAL,
        framework="toy",
        reference_answer="Canberra" if reference else None,
        metadata={"toy": True},
    ) as t:
        _steps(t, 0, corrected=False)
    return t.trajectory()


class ToyExecutor:
    """Reruns the toy agent from the requested step; ``mode`` makes it fail again
    (``stubborn``), raise (``broken``), or fail the first round's rerun and pass
    the second's (``second_time``)."""

    framework = "toy"

    def __init__(self, dbg: AgentDebug | None = None, mode: str = "normal") -> None:
        self.dbg = dbg
        self.mode = mode
        self.requests: list[RerunRequest] = []

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        self.requests.append(request)
        if self.mode == "broken":
            raise RuntimeError("the sandbox is gone")
        corrected = self.mode != "stubborn" and bool(request.directive.strip())
        if self.mode == "second_time":
            corrected = request.attempt >= 2
        dbg = self.dbg or branch_debugger(request)
        with start_branch(dbg, request, framework="toy") as t:
            _steps(t, request.resume_step, corrected=corrected)
        return t.trajectory()


def make_executor() -> ToyExecutor:
    return ToyExecutor()


def make_stubborn_executor() -> ToyExecutor:
    return ToyExecutor(mode="stubborn")


def make_second_time_executor() -> ToyExecutor:
    return ToyExecutor(mode="second_time")
