"""The report's and the timeline's reading of a run: events in the order a reader
follows them, one line each (a tool call as tool(arguments), a cut-off model
call as such), a branch diff read the same way, and a report that says why it
names no root cause and what the cache answered."""

from __future__ import annotations

from typing import Any

from agentdebug.diagnose import diagnose
from agentdebug.report import render
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)
from conftest import EXAMPLES, ev, traj


def _filed_back() -> AgentTrajectory:
    """A graph run: the model at step 1 asks for a tool that the tools node (step 2)
    runs; the call is recorded as the node runs it but filed under step 1."""
    return AgentTrajectory(
        id="lg",
        goal="refund A123",
        framework="langgraph",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="no refund"),
        events=[
            AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="refund A123"),
            AgentEvent(id="e1", type=EventType.AGENT_START, step_index=1, agent_name="agent"),
            AgentEvent(
                id="e2",
                type=EventType.LLM_RESPONSE,
                step_index=1,
                agent_name="agent",
                output={"role": "assistant", "content": "", "tool_calls": []},
            ),
            AgentEvent(id="e3", type=EventType.AGENT_END, step_index=1, agent_name="agent"),
            AgentEvent(id="e4", type=EventType.AGENT_START, step_index=2, agent_name="tools"),
            AgentEvent(
                id="e5",
                type=EventType.TOOL_CALL,
                step_index=1,
                agent_name="agent",
                module="lookup",
                parent_id="e2",
                input={"email": "A123"},
            ),
            AgentEvent(
                id="e6",
                type=EventType.TOOL_RESULT,
                step_index=2,
                agent_name="tools",
                module="lookup",
                parent_id="e5",
                error=ErrorInfo(message="'A123' is not an e-mail address"),
            ),
            AgentEvent(id="e7", type=EventType.AGENT_END, step_index=2, agent_name="tools"),
            AgentEvent(
                id="e8",
                type=EventType.FINAL_ANSWER,
                step_index=3,
                agent_name="agent",
                output="done",
            ),
        ],
    )


def test_an_event_filed_under_an_earlier_step_is_shown_with_that_step() -> None:
    from agentdebug.report import render_run

    t = _filed_back()
    assert t.step_order() == [0, 1, 2, 3, 5, 4, 6, 7, 8]
    # nothing else moves: a node's end after the subgraph nodes it ran, a final
    # answer an earlier step gave after a later node (a formatter) ran
    nested = traj(
        ev(0, EventType.USER_INPUT, None, input="q"),
        AgentEvent(id="o1", type=EventType.AGENT_START, step_index=1, agent_name="research"),
        AgentEvent(id="i2", type=EventType.AGENT_START, step_index=2, agent_name="research/pick"),
        AgentEvent(id="i3", type=EventType.AGENT_END, step_index=2, agent_name="research/pick"),
        AgentEvent(id="o4", type=EventType.AGENT_END, step_index=1, agent_name="research"),
        AgentEvent(id="f5", type=EventType.AGENT_START, step_index=3, agent_name="format"),
        AgentEvent(id="a6", type=EventType.FINAL_ANSWER, step_index=2, agent_name="research/pick"),
    )
    assert nested.step_order() == list(range(7))
    shown = [line for line in render_run(t).splitlines() if line.startswith(("→", "  ["))]
    kinds = [(line.split("]")[0][-3:].strip(), line.split()[-1]) for line in shown]
    assert kinds[3:6] == [("1", "agent.end"), ("1", "tool.call"), ("2", "agent.start")]
    text = render(diagnose(t), t, "text")
    lines = text.splitlines()
    root = next(i for i, line in enumerate(lines) if "← root cause" in line)
    assert lines[root].startswith("→ [  1] agent  tool.call")
    # every event line above the root cause is of step 1 or before
    above = [line for line in lines[:root] if line.startswith(("→ [", "  ["))]
    assert above and all(int(line.split("[")[1].split("]")[0]) <= 1 for line in above)


def test_a_branch_diff_reads_both_runs_in_step_order() -> None:
    from agentdebug.rerun.diff import compare

    a = _filed_back()
    b = a.model_copy(
        update={
            "id": "lg2",
            "events": [
                e.model_copy(update={"input": {"order_id": "A123"}}) if e.id == "e5" else e
                for e in a.events
            ],
        }
    )
    rows = compare(a, b).rows
    assert [r.a.id for r in rows if r.a is not None] == [
        "e0",
        "e1",
        "e2",
        "e3",
        "e5",
        "e4",
        "e6",
        "e7",
        "e8",
    ]
    assert [r.tag for r in rows].count("changed") == 1
    changed = next(r for r in rows if r.tag == "changed")
    assert changed.a is not None and changed.a.id == "e5"


def test_timeline_lines_name_the_tool_mark_a_cut_off_call_and_read_a_nodes_commands() -> None:
    from agentdebug.report import event_line

    call = ev(2, EventType.TOOL_CALL, "agent", module="lookup_order", input={"order_id": "A1"})
    assert event_line(call, 80) == 'lookup_order({"order_id":"A1"})'
    cut = ev(
        3,
        EventType.LLM_RESPONSE,
        "agent",
        input=[{"role": "user", "content": "refund A1"}],
        metadata={"stopped": "the run ended before the model answered"},
    )
    line = event_line(cut, 80)
    assert line == "[stopped: the run ended before the model answered]"  # not its prompt
    partial = cut.model_copy(update={"output": {"role": "assistant", "content": "Hello there"}})
    assert event_line(partial, 100).endswith("answered] Hello there")
    cancelled = ev(  # a tool run a sibling's failure cancelled: not a blank line
        3,
        EventType.TOOL_RESULT,
        "tools",
        module="slow_lookup",
        metadata={"stopped": "the call was stopped (CancelledError)"},
    )
    assert event_line(cancelled, 80) == "[stopped: the call was stopped (CancelledError)]"
    commands = ev(
        4,
        EventType.AGENT_END,
        "model",
        output=[
            {"command": True, "update": {"messages": ["hi"]}},
            {"command": True, "goto": "tools", "update": {}},
        ],
    )
    line = event_line(commands, 100)
    assert "True" not in line
    assert line.startswith("command: ") and "; command → tools" in line


def test_a_report_naming_no_root_cause_says_why_not_that_nothing_was_found() -> None:
    from agentdebug.schema import AuditEntry

    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory)
    assert report.findings
    bare = report.model_copy(update={"hypotheses": [], "fix": None})
    assert (
        "Root cause: none named (the heuristic attributor named no step from these findings)"
        in (render(bare, trajectory, "text"))
    )
    gave_up = bare.model_copy(
        update={
            "audit": [
                *bare.audit,
                AuditEntry(
                    stage="lifecycle",
                    strategy="lifecycle",
                    outcome="no-answer",
                    detail="no error instance survived grounding; no answer",
                ),
            ]
        }
    )
    text = render(gave_up, trajectory, "text")
    assert "Root cause: none named (no error instance survived grounding; no answer)" in text
    assert "no finding and no structural candidate" not in text


def test_the_text_report_counts_calls_the_cache_answered() -> None:
    from agentdebug.schema import Cost

    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory).model_copy(
        update={
            "cost": Cost(
                calls=1,
                input_tokens=10,
                output_tokens=2,
                cached_calls=2,
                cached_input_tokens=300,
                cached_output_tokens=40,
            )
        }
    )
    line = next(x for x in render(report, trajectory, "text").splitlines() if x.startswith("Cost:"))
    assert line == (
        "Cost: 1 model call(s), 10 input and 2 output tokens (+2 answered from the cache: "
        "300 input and 40 output tokens not spent again)"
    )


def test_a_diff_row_that_reads_the_same_shows_what_differs_in_its_input() -> None:
    from agentdebug.rerun.diff import compare

    prompt = [{"role": "user", "content": "Please refund my order A123, it arrived broken."}]
    told = [*prompt, {"role": "user", "content": "Fix: look the order up by its id."}]
    a = traj(
        ev(0, EventType.USER_INPUT, None, input="refund A123"),
        ev(1, EventType.LLM_RESPONSE, "agent", input=prompt, output="calling lookup"),
        ev(2, EventType.TOOL_CALL, "agent", module="lookup_order", input={"email": "A123"}),
    )
    b = a.model_copy(
        update={
            "id": "t2",
            "events": [
                a.events[0],
                a.events[1].model_copy(update={"input": told}),
                a.events[2].model_copy(update={"input": {"order_id": "A123"}}),
            ],
        }
    )
    text = compare(a, b).render()
    lines = text.splitlines()
    changed = [x for x in lines if x.startswith(("  ~ A", "    B"))]
    assert changed[0].startswith("  ~ A step   1 llm.response  agent: given …")
    assert "Fix: look the order up by its id." in changed[1]
    assert changed[2] == '  ~ A step   2 tool.call     agent: lookup_order({"email":"A123"})'


def test_a_diff_row_whose_answers_differ_past_the_width_shows_where() -> None:
    """Two model answers asking for different tools, alike for their first 100
    characters (the call ids, a long preamble): the changed row shows both from
    where they differ (before: cut at the same place, they read the same)."""
    from agentdebug.rerun.diff import compare

    def answer(tool: str) -> dict[str, Any]:
        said = "I will check this for you right away, one moment please, looking it up now."
        return {"role": "assistant", "content": said, "tool_calls": [{"id": "c1", "name": tool}]}

    a = traj(
        ev(0, EventType.USER_INPUT, None, input="weather in Oslo?"),
        ev(1, EventType.LLM_RESPONSE, "agent", output=answer("get_time")),
    )
    b = a.model_copy(
        update={"id": "t2", "events": [a.events[0], ev(1, EventType.LLM_RESPONSE, "agent",
                                                       output=answer("get_weather"))]}
    )  # fmt: skip
    lines = compare(a, b).render().splitlines()
    (ours,) = [x for x in lines if x.startswith("  ~ A")]
    theirs = lines[lines.index(ours) + 1]
    assert '"name":"get_time"' in ours and '"name":"get_weather"' in theirs


def _looked_up(results: int) -> AgentTrajectory:
    """A question, ``results`` lookups whose results sit between notes of the agent's,
    and a wrong final answer: no rule finds anything."""
    events = [ev(0, EventType.USER_INPUT, None, input="How much did order A123 cost?")]
    for k in range(results):
        n = len(events)
        events += [
            ev(n, EventType.REASONING, "agent", output=f"I will look up part {k} of the order."),
            ev(n + 1, EventType.REASONING, "agent", output="Then I will read what it says."),
            ev(
                n + 2,
                EventType.TOOL_RESULT,
                "agent",
                output=f"part {k}: ${42 + k}.00",
                metadata={"tool_name": "lookup_order"},
            ),
            ev(n + 3, EventType.REASONING, "agent", output="Noted; moving on to the next part."),
        ]
    n = len(events)
    events.append(ev(n, EventType.FINAL_ANSWER, "agent", output="Order A123 costs $35.00."))
    run = traj(*events)
    return run.model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="wrong total")}
    )


def test_the_results_the_agent_was_given_are_shown_when_the_run_has_few() -> None:
    """Before: a tool's result away from the blamed step and the symptom was folded
    into "... event(s) not shown ...", and with it the evidence to check the blame by
    ($42.00 read as $24.00)."""
    run = _looked_up(2)
    text = render(diagnose(run), run, "text")
    assert "part 0: $42.00" in text and "part 1: $43.00" in text
    many = _looked_up(13)  # (more than twelve: the timeline stays short)
    text = render(diagnose(many), many, "text")
    assert "part 6: $48.00" not in text


def test_a_short_run_is_shown_whole_and_a_guess_shows_every_decision() -> None:
    """A review's user could not see the step that went wrong: a 19-event run's
    report folded it into "... event(s) not shown ..." beside a default guess. A run
    of 30 events or fewer is shown whole; in a longer one whose root cause is a
    guess, every decision is shown (the reader has to judge them)."""
    short = _looked_up(4)  # (18 events)
    text = render(diagnose(short), short, "text")
    assert "not shown" not in text
    assert text.count("Then I will read what it says.") == 4
    long = _looked_up(13)
    events = [*long.events[:-1], ev(len(long.events) - 1, EventType.FINAL_ANSWER, "agent",
                                    output="Order A123 is on its way.")]  # fmt: skip
    long = long.model_copy(update={"events": events})
    report = diagnose(long)
    assert report.root_cause is not None and report.root_cause.metadata.get("default_guess")
    text = render(report, long, "text")
    assert text.count("Then I will read what it says.") == 13
    assert "part 6: $48.00" not in text  # (results beyond twelve stay folded)
    longer = _looked_up(40)  # (120 decisions: the first and the last twenty shown)
    events = [*longer.events[:-1], ev(len(longer.events) - 1, EventType.FINAL_ANSWER, "agent",
                                      output="Order A123 is on its way.")]  # fmt: skip
    longer = longer.model_copy(update={"events": events})
    text = render(diagnose(longer), longer, "text")
    assert "I will look up part 0 of the order." in text
    assert "I will look up part 39 of the order." in text  # (the last, before the end)
    assert "I will look up part 20 of the order." not in text


def test_a_branchs_header_says_what_it_was_given() -> None:
    """A directive, a state patch with no directive, or nothing: a retry (before, a
    patched branch read as a retry)."""
    from agentdebug.report import render_run

    def branch(**given: Any) -> str:
        meta = {"branch": {"resume_step": 2, "directive": "", **given}}
        run = traj(ev(0, EventType.USER_INPUT, None, input="go")).model_copy(
            update={"parent_id": "r0", "metadata": meta}
        )
        return render_run(run)

    assert "(rerun from step 2: Use the policy.)" in branch(directive="Use the policy.")
    assert '(rerun from step 2: a state patch, {"rate":1.085})' in branch(
        state_patch={"rate": 1.085}
    )
    assert "(rerun from step 2: no directive given, a retry)" in branch()
