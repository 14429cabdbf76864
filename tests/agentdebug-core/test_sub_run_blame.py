"""What a sub-agent's run brought back into the run it is within is that agent's
work: a model strategy may blame it there, and the trace it is shown names it
among the agents."""

from __future__ import annotations

from pathlib import Path

from agentdebug import AgentDebug, EventType
from agentdebug.diagnose import diagnose
from agentdebug.llm.testing import Reply, ScriptedServer
from test_strategies import answer, settings_for, user_text


def test_a_model_may_blame_the_sub_agent_whose_run_came_back(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path)
    with dbg.trace(goal="Which city hosts the 2026 summit?", agents=["boss"]) as outer:
        outer.record(EventType.MESSAGE, agent_name="boss", output="researcher: find the city")
        with dbg.trace(goal="find the city", agents=["researcher"]) as sub:
            sub.record(EventType.FINAL_ANSWER, agent_name="researcher", output="Berlin")
        outer.record(EventType.FINAL_ANSWER, agent_name="boss", output="Berlin")
        outer.set_outcome("failure", reason="the summit is in Lyon")
    run = dbg.store.load_trajectory(outer.id)
    came_back = next(e for e in run.events if e.metadata.get("sub_run"))
    assert came_back.type is EventType.OBSERVATION and came_back.agent_name == "researcher"
    step = came_back.step_index
    with ScriptedServer([Reply(answer("researcher", step, confidence=0.8))]) as server:
        report = diagnose(run, attributor="all-at-once", settings=settings_for(server))
    shown = user_text(server.requests[0])
    agents_line = next(line for line in shown.splitlines() if line.startswith("AGENTS:"))
    assert "researcher" in agents_line
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.confidence) == ("researcher", step, 0.8)
