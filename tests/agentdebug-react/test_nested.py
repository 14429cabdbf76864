"""A ReAct agent whose tool is another ReAct agent: the inner run is the outer
run's sub-run, reported at the step that called it."""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug
from agentdebug_react import ReactLoop, Step, StepContext


def _researcher(dbg: AgentDebug) -> ReactLoop[Any]:
    def step(ctx: StepContext[Any]) -> Step:
        if ctx.step == 1:
            return Step(
                thought="Look it up.",
                action="lookup",
                action_input="population",
                observation="Error: not found",
                error="KeyError: population",
            )
        return Step.finish("7 million", thought="I will guess.")

    return ReactLoop(
        step, debugger=dbg, agent_name="researcher", success=lambda a: a == "8 million"
    )


def test_a_sub_agents_result_is_recorded_at_the_step_that_called_it(dbg: AgentDebug) -> None:
    researcher = _researcher(dbg)

    def lead(ctx: StepContext[Any]) -> Step:
        if ctx.step == 1:
            found = researcher.run("What is the population?")
            return Step(
                thought="Ask the researcher.",
                action="ask_researcher",
                action_input="What is the population?",
                observation=found.answer,
            )
        return Step.finish("about 7 million")

    outer = ReactLoop(lead, debugger=dbg, agent_name="lead", success=lambda a: "8" in a)
    result = outer.run("Write a summary of the city.")
    run = result.trajectory()
    (sub,) = [e for e in run.events if e.agent_name == "researcher"]
    assert sub.step_index == 1  # the lead's step 1 called it (before: step 2)
    assert sub.metadata["sub_run_status"] == "failure"
    assert [e.step_index for e in run.events] == sorted(e.step_index for e in run.events)
    assert result.report is not None and result.report.root_cause is not None
    root = result.report.root_cause
    assert (root.agent_name, root.step_index) == ("researcher", 1)
