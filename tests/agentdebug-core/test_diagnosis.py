"""Heuristic attribution, the diagnosis pipeline and the renderers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.attribute import HeuristicAttributor
from agentdebug.detect import RulePack
from agentdebug.diagnose import FREE_TIER_NOTE, diagnose
from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.plugins import Registry, hookimpl, make_plugin_manager
from agentdebug.report import render
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Finding,
    Outcome,
    OutcomeStatus,
)
from conftest import EXAMPLES, ev, traj


def error_at(
    i: int, step: int, agent: str | None, parent: str, message: str, **kw: Any
) -> AgentEvent:
    """An error event filed under ``parent`` at ``step`` (a step it shares with it)."""
    return AgentEvent(
        id=f"e{i}",
        type=EventType.ERROR,
        step_index=step,
        agent_name=agent,
        parent_id=parent,
        error=ErrorInfo(message=message, type=kw.pop("type", None)),
        **kw,
    )


def attribute(t: AgentTrajectory) -> list[tuple[str | None, int | None]]:
    hyps = HeuristicAttributor().attribute(t, RulePack().detect(t))
    return [(h.agent_name, h.step_index) for h in hyps]


def test_a_failing_tool_is_charged_to_the_agent_that_called_it() -> None:
    t = traj(
        ev(0, EventType.USER_INPUT, "human", output="Count the even addresses."),
        ev(
            1, EventType.MESSAGE, "Excel_Expert", output="```python\ndata['Street Address']...\n```"
        ),
        ev(
            2,
            EventType.TOOL_RESULT,
            "Computer_terminal",
            output="exitcode: 1 (execution failed)\nKeyError: 'Street Address'",
        ),
        ev(3, EventType.MESSAGE, "Verifier", output="Let me check the columns."),
    )
    assert attribute(t)[0] == ("Excel_Expert", 1)


def test_a_parent_link_names_the_call_directly() -> None:
    t = traj(
        ev(0, EventType.TOOL_CALL, "planner", input={"q": 1}),
        ev(1, EventType.TOOL_CALL, "coder", input={"code": "1/0"}),
        AgentEvent(
            id="e2",
            type=EventType.TOOL_RESULT,
            step_index=2,
            agent_name="sandbox",
            parent_id="e1",
            error=ErrorInfo(message="ZeroDivisionError"),
        ),
    )
    assert attribute(t)[0] == ("coder", 1)


def test_environment_faults_stay_on_the_tool_step() -> None:
    t = traj(
        ev(0, EventType.TOOL_CALL, "searcher", input={"q": "x"}),
        ev(1, EventType.TOOL_RESULT, "searcher", error="HTTP 429 Too Many Requests"),
    )
    assert attribute(t)[0] == ("searcher", 1)


def test_an_error_its_integration_placed_keeps_its_step_and_its_known_mode() -> None:
    # A framework's error recorded at the node it concerns, with the mode the
    # integration knows it to be: neither the error's text ("validation error" reads
    # as a malformed tool call) nor an earlier decision takes it over.
    t = traj(
        ev(0, EventType.USER_INPUT, None, input={"count": "x"}),
        ev(1, EventType.LLM_RESPONSE, "planner", output="use count"),
        ev(2, EventType.AGENT_END, "writer", output={"count": "x"}),
        error_at(
            3,
            2,
            "writer",
            "e2",
            "1 validation error for State count",
            type="ValidationError",
            metadata={"failure_mode": "system.schema_violation"},
        ),
    )
    report = diagnose(t)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("writer", 2)
    assert report.root_cause.mode_id == "system.schema_violation"
    unplaced = t.model_copy(
        update={"events": [*t.events[:3], t.events[3].model_copy(update={"metadata": {}})]}
    )
    assert diagnose(unplaced).root_cause.mode_id == "action.malformed_tool_call"  # type: ignore[union-attr]


def test_an_error_filed_under_the_input_blames_the_runs_input() -> None:
    t = traj(
        ev(0, EventType.USER_INPUT, None, input={"count": "x"}),
        error_at(
            1,
            0,
            None,
            "e0",
            "1 validation error for State count",
            type="ValidationError",
            metadata={"failure_mode": "system.schema_violation"},
        ),
    )
    report = diagnose(t)
    assert "Most likely root cause: the run's input at the same step" in report.summary
    assert report.fix is not None
    assert report.fix.directive.startswith("At step 0, the run's input: Make the value fit")


def test_an_error_an_agents_own_step_raised_is_charged_to_that_step_first() -> None:
    # A graph node whose own code raised (its error under its own start), after a
    # model step it did not call: not the tool case, where the caller is charged.
    t = traj(
        ev(0, EventType.USER_INPUT, None, input="write"),
        ev(1, EventType.LLM_RESPONSE, "writer", output="draft one"),
        ev(2, EventType.AGENT_START, "formatter"),
        error_at(3, 2, "formatter", "e2", "formatter bug", type="RuntimeError"),
    )
    assert attribute(t)[:2] == [("formatter", 2), ("writer", 1)]


def test_a_model_call_that_failed_is_its_agents_own_step_not_an_earlier_agents() -> None:
    # A node's model call failed (the provider's error), and the node raised it: the
    # call is that node's own step, not one an earlier agent's decision issued, and
    # the node's error is charged to the call it came out of (one failure).
    t = traj(
        ev(0, EventType.USER_INPUT, None, input="hi"),
        ev(1, EventType.AGENT_START, "planner"),
        ev(2, EventType.LLM_RESPONSE, "planner", output="plan: look it up"),
        ev(3, EventType.AGENT_START, "answer"),
        AgentEvent(
            id="e4",
            type=EventType.LLM_RESPONSE,
            step_index=3,
            agent_name="answer",
            parent_id="e3",
            error=ErrorInfo(message="model server returned malformed JSON", type="RuntimeError"),
        ),
        error_at(5, 3, "answer", "e3", "model server returned malformed JSON", type="RuntimeError"),
    )
    hyps = HeuristicAttributor().attribute(t, RulePack().detect(t))
    assert [(h.agent_name, h.step_index) for h in hyps][:2] == [("answer", 3), ("planner", 2)]
    assert hyps[0].event_id == "e4"  # the step's earliest event: the failed call


def test_the_earliest_of_equal_errors_ranks_first() -> None:
    t = traj(
        ev(0, EventType.TOOL_CALL, "a", input={"n": 1}),
        ev(1, EventType.TOOL_RESULT, "tool", error="ValueError: bad n"),
        ev(2, EventType.TOOL_CALL, "b", input={"n": 2}),
        ev(3, EventType.TOOL_RESULT, "tool", error="ValueError: bad n"),
    )
    assert attribute(t)[:2] == [("a", 0), ("b", 2)]


def test_with_no_finding_the_structural_prior_is_low_confidence() -> None:
    t = failed(
        ev(0, EventType.USER_INPUT, "human", output="What is 2+2?"),
        ev(1, EventType.MESSAGE, "solver", output="It is 5."),
        ev(2, EventType.FINAL_ANSWER, "reporter", output="5"),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert [(h.agent_name, h.step_index) for h in hyps] == [("solver", 1), ("reporter", 2)]
    assert all(h.confidence <= 0.15 for h in hyps)
    assert "no detector fired" in hyps[0].rationale


def test_with_no_finding_the_structural_prior_needs_a_run_known_to_have_failed() -> None:
    """Nothing found, and nothing says the run failed (an imported log, a TRAIL trace):
    no guess at the first decision (before, "solver at step 1, unclassified")."""
    t = traj(
        ev(0, EventType.USER_INPUT, "human", output="What is 2+2?"),
        ev(1, EventType.MESSAGE, "solver", output="It is 4."),
        ev(2, EventType.FINAL_ANSWER, "reporter", output="4"),
    )
    assert t.outcome.status is OutcomeStatus.UNKNOWN
    assert HeuristicAttributor().attribute(t, []) == []


def test_with_no_finding_a_call_that_failed_is_not_the_first_decision() -> None:
    """A model call that timed out and was tried again decided nothing: the prior
    starts at the try that answered."""
    t = failed(
        ev(0, EventType.USER_INPUT, "human", output="What is 2+2?"),
        ev(1, EventType.LLM_RESPONSE, "solver", error="model timed out"),
        ev(2, EventType.LLM_RESPONSE, "solver", output="It is 5."),
        ev(3, EventType.FINAL_ANSWER, "reporter", output="5"),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert [(h.agent_name, h.step_index) for h in hyps] == [("solver", 2), ("reporter", 3)]


def failed(*events: AgentEvent) -> AgentTrajectory:
    """A run known to have failed (its success check said so, giving no reason)."""
    return traj(*events).model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})


def failed_with(reason: str, *events: AgentEvent) -> AgentTrajectory:
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


PRICES = (
    ev(0, EventType.USER_INPUT, "human", input="price items A, B and C"),
    ev(1, EventType.LLM_RESPONSE, "price", output="price of A: $10"),
    ev(2, EventType.LLM_RESPONSE, "price", output="price of B: UNKNOWN"),
    ev(3, EventType.LLM_RESPONSE, "price", output="price of C: $10"),
    ev(4, EventType.FINAL_ANSWER, "reduce", output="A: $10; B: UNKNOWN; C: $10"),
)


def test_with_no_finding_the_step_whose_words_the_reason_quotes_comes_first() -> None:
    """Parallel branches alike: the success check's reason quotes the total, and one
    word of it (not the task's, nor said by another branch) is one branch's."""
    t = failed_with("bad total 'A: $10; B: UNKNOWN; C: $10'", *PRICES)
    hyps = HeuristicAttributor().attribute(t, [])
    assert [(h.agent_name, h.step_index) for h in hyps] == [
        ("price", 2),
        ("price", 1),
        ("reduce", 4),
    ]
    assert "'unknown'" in hyps[0].rationale and hyps[0].confidence <= 0.2


def test_with_no_finding_a_quoted_number_points_at_the_step_that_gave_it() -> None:
    t = failed_with(
        "expected a total of 42, got '41'",
        ev(0, EventType.USER_INPUT, "human", input="add the parts"),
        ev(1, EventType.LLM_RESPONSE, "adder", output="first part: 20"),
        ev(2, EventType.LLM_RESPONSE, "adder", output="second part: 21"),
        ev(3, EventType.LLM_RESPONSE, "summer", output="total: 41"),
        ev(4, EventType.FINAL_ANSWER, "summer", output="41"),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert (hyps[0].agent_name, hyps[0].step_index) == ("summer", 3)
    assert "'41'" in hyps[0].rationale


@pytest.mark.parametrize(
    "reason",
    [
        "the total is wrong",  # quotes nothing
        "the total is wrong for the B item",  # names no value (a capital first is prose)
        "bad total '$10 and $10'",  # words two steps said
        "bad total 'price items'",  # the task's own words
        "expected 'UNKNOWN', got 'A: $10'",  # the value wanted, then words of two steps
    ],
)
def test_with_no_finding_a_reason_that_singles_out_no_step_leaves_the_first(reason: str) -> None:
    hyps = HeuristicAttributor().attribute(failed_with(reason, *PRICES), [])
    assert [(h.agent_name, h.step_index) for h in hyps] == [("price", 1), ("reduce", 4)]


def test_with_no_finding_a_call_stopped_before_it_said_anything_decided_nothing() -> None:
    stopped = ev(1, EventType.LLM_RESPONSE, "solver", metadata={"stopped": "cancelled"})
    t = failed(
        ev(0, EventType.USER_INPUT, "human", output="What is 2+2?"),
        stopped,
        ev(2, EventType.LLM_RESPONSE, "solver", output="It is 5."),
        ev(3, EventType.FINAL_ANSWER, "reporter", output="5"),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert [h.event_id for h in hyps] == ["e2", "e3"]


def test_the_example_run_is_traced_back_to_the_bad_search_call() -> None:
    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("searcher", 3)
    assert report.symptom is not None and report.symptom.step_index == 13
    assert report.fix is not None and report.fix.target_step == 3
    assert report.notes[0] == FREE_TIER_NOTE
    assert report.cost.calls == 0
    assert {
        "action.repeated_action",
        "observation.error_ignored",
        "verification.premature_success",
    } <= set(report.failure_modes)


def test_a_crashing_detector_is_named_in_the_report_and_the_rest_goes_on() -> None:
    class Broken:
        name = "broken"

        def detect(self, trajectory: AgentTrajectory) -> list[Finding]:
            raise KeyError("oops")

    class Plugin:
        @hookimpl
        def agentdebug_detectors(self) -> list[Broken]:
            return [Broken()]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Plugin())
    reg = Registry.from_plugin_manager(pm)
    t = traj(ev(0, EventType.TOOL_RESULT, "tool", error="HTTP 500"))
    report = diagnose(t, registry=reg)
    assert any("detector 'broken' failed" in n for n in report.notes)
    assert [a.outcome for a in report.audit if a.strategy == "broken"] == ["error"]
    assert report.failure_modes == ["system.tool_error"]


def test_unknown_attributor_and_empty_runs_are_clear_errors() -> None:
    with pytest.raises(
        NotFoundError,
        match="unknown attributor 'magic' \\(known: all-at-once, auto, binary-search, deepdebug, heuristic, lifecycle, step-by-step\\)",
    ):
        diagnose(traj(ev(0, EventType.MESSAGE, "a", output="x")), attributor="magic")
    with pytest.raises(AgentDebugError, match="has no events"):
        diagnose(AgentTrajectory(id="empty"))


def test_text_report_marks_root_cause_and_symptom_like_a_traceback() -> None:
    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory)
    text = render(report, trajectory, "text")
    lines = text.splitlines()
    root_line = next(line for line in lines if "← root cause" in line)
    assert root_line.startswith("→ [  3] searcher")
    assert any("← failure shows here" in line and "[ 13]" in line for line in lines)
    assert "Root cause: searcher at step 3" in text
    assert lines[-1].startswith("PrematureSuccess: declared done at step 13")
    assert "Fix: At step 3, searcher:" in text


def test_long_runs_are_elided_around_the_steps_that_matter() -> None:
    events = [ev(i, EventType.MESSAGE, "chatty", output=f"thinking {i}") for i in range(200)]
    events[120] = ev(120, EventType.TOOL_RESULT, "tool", error="ValueError: nope")
    t = traj(*events)
    text = render(diagnose(t), t, "text")
    assert "event(s) not shown" in text
    assert len(text.splitlines()) < 40


def test_markdown_and_json_carry_the_same_answer() -> None:
    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory)
    md = render(report, trajectory, "md")
    assert md.startswith("# Diagnosis of run `example-failed-booking`")
    assert "| 1 | searcher | 3 | action.malformed_tool_call |" in md
    data = json.loads(render(report, trajectory, "json"))
    assert data["hypotheses"][0]["step_index"] == 3
    assert data["trajectory_id"] == "example-failed-booking"


def test_a_run_its_caller_stopped_with_nothing_wrong_gets_no_root_cause() -> None:
    events = [
        ev(0, EventType.USER_INPUT, None, input="weather in Paris?"),
        ev(1, EventType.LLM_RESPONSE, "agent", output="It is"),
    ]
    stopped = AgentTrajectory(
        id="s",
        events=events,
        outcome=Outcome(status=OutcomeStatus.UNKNOWN, stopped_by="GeneratorExit"),
    )
    report = diagnose(stopped)
    assert report.root_cause is None and report.fix is None
    assert any("stopped before it ended (GeneratorExit)" in n for n in report.notes)
    # a run known to have failed is still given a candidate with nothing found
    failed = stopped.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})
    assert diagnose(failed).root_cause is not None


def test_a_run_whose_outcome_is_unknown_with_nothing_wrong_gets_no_root_cause() -> None:
    """An imported conversation ("hi" / "hello") or a TRAIL trace says nothing of how
    it ended: with no finding, no step is blamed (before, "assistant at step 1,
    unclassified, confidence 0.15" beside "NoFailureFound", which `list` then showed)."""
    t = traj(
        ev(0, EventType.USER_INPUT, None, output="hi"),
        ev(1, EventType.FINAL_ANSWER, "assistant", output="Hello! How can I help?"),
    )
    assert t.outcome.status is OutcomeStatus.UNKNOWN
    report = diagnose(t)
    assert report.root_cause is None and report.hypotheses == [] and report.fix is None
    assert any("does not say whether it failed" in n for n in report.notes)
    text = render(report, t, "text")
    assert "Root cause: none named (the run does not say whether it failed" in text
    assert "NoFailureFound" in text
    assert "unclassified" not in text
    # a finding of any weight still gets its root cause
    t2 = traj(
        ev(0, EventType.USER_INPUT, None, output="weather?"),
        ev(1, EventType.TOOL_RESULT, "assistant", error="503 Service Unavailable"),
        ev(2, EventType.FINAL_ANSWER, "assistant", output="It is sunny."),
    )
    assert diagnose(t2).root_cause is not None


def test_an_answer_that_reports_the_error_is_one_symptom_not_the_cause() -> None:
    """The tool answered with an error text (it did not raise) and the model ended
    with an apology and a claim of success: two rules speak of that end (an answer
    that opens as a refusal, a success declared over the error), which is still
    one symptom; the call the model made with the wrong argument is blamed."""
    t = AgentTrajectory(
        id="soft",
        goal="Please refund order A123",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="no refund was issued"),
        events=[
            ev(0, EventType.USER_INPUT, None, input="Please refund order A123"),
            ev(1, EventType.TOOL_CALL, "agent", module="lookup_order", input={"id": "a-123"}),
            AgentEvent(
                id="e2",
                type=EventType.TOOL_RESULT,
                step_index=2,
                agent_name="tools",
                module="lookup_order",
                parent_id="e1",
                output="ERROR: no such order",
            ),
            ev(
                3,
                EventType.FINAL_ANSWER,
                "agent",
                output="I'm sorry for the wait. Your refund has been completed.",
            ),
        ],
    )
    report = diagnose(t)
    modes = {f.mode_id for f in report.findings}
    assert {"verification.premature_success", "verification.invalid_final_output"} <= modes
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("agent", 1)
    for h in report.hypotheses:  # two findings quoting one answer: quoted once
        quoted = [(e.event_id, e.field, e.quote) for e in h.evidence]
        assert len(quoted) == len(set(quoted))
    ended = next(h for h in report.hypotheses if h.step_index == 3)
    assert len(ended.evidence) < 3


def test_a_run_that_failed_on_its_final_answer_shows_its_failure_there() -> None:
    """The early error is where the cause is; the wrong answer, which the run's
    check refused, is where the failure shows (the react example's shape)."""
    t = AgentTrajectory(
        id="late",
        goal="Q3 revenue?",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="revenue should be 112,000"),
        events=[
            ev(0, EventType.USER_INPUT, None, input="Q3 revenue?"),
            ev(1, EventType.TOOL_CALL, "analyst", module="read_file", input={"path": "q3.csv"}),
            AgentEvent(
                id="r1",
                type=EventType.TOOL_RESULT,
                step_index=1,
                agent_name="analyst",
                module="read_file",
                parent_id="e1",
                error=ErrorInfo(message="No such file or directory: 'q3.csv'"),
            ),
            ev(2, EventType.TOOL_CALL, "analyst", module="read_file", input={"path": "q2.csv"}),
            AgentEvent(
                id="r2",
                type=EventType.TOOL_RESULT,
                step_index=2,
                agent_name="analyst",
                module="read_file",
                parent_id="e2",
                output="month,revenue\n7,35850\n8,35850\n9,35850",
            ),
            ev(4, EventType.FINAL_ANSWER, "analyst", output="107550"),
        ],
    )
    report = diagnose(t)
    assert report.symptom is not None and report.symptom.event_id == "e4"
    assert report.symptom.message == "the final answer failed: revenue should be 112,000"
    assert report.summary.startswith("The failure shows at step 4: the final answer failed")
    assert report.root_cause is not None and report.root_cause.step_index == 1
    text = render(report, t, "text").splitlines()
    assert any("final_answer" in x and "← failure shows here" in x for x in text)
    assert text[-1] == "RunFailed: the final answer failed: revenue should be 112,000"
    # no final answer (the run raised): the latest error still shows it
    raised = t.model_copy(update={"events": t.events[:3]})
    assert diagnose(raised).symptom.event_id == "r1"  # type: ignore[union-attr]


def test_a_node_that_raised_is_named_as_itself_with_one_full_stop_and_one_quote() -> None:
    """Probes' wording faults: a node's error read "langgraph.node failed" (its module
    taken for a tool), a quote ending in a full stop gave two, and a tool's failed
    result and its node's error, both quoting the same text at one step, gave the
    evidence twice."""
    events = [
        ev(0, EventType.USER_INPUT, None, input="Price of item 7?"),
        ev(1, EventType.TOOL_CALL, "agent", module="send_email", input={"to": "bob"}),
        ev(2, EventType.TOOL_RESULT, "agent", module="send_email", error="unknown domain."),
        AgentEvent(
            id="e3",
            type=EventType.ERROR,
            step_index=2,
            agent_name="tools",
            module="langgraph.node",
            error=ErrorInfo(message="unknown domain."),
        ),
    ]
    report = diagnose(traj(*events), attributor="heuristic")
    messages = [f.message for f in report.findings]
    assert "tools raised: unknown domain." in messages
    assert not any("langgraph.node" in m for m in messages)
    assert ".." not in report.summary
    root = report.root_cause
    assert root is not None
    assert len([e.quote for e in root.evidence]) == len({e.quote for e in root.evidence})


def test_the_structural_prior_names_an_agent_and_step_once() -> None:
    """No detector fired: the first decision and the final answer, when both are
    one agent's at one step, are one candidate, not the root and an "also"."""
    final = AgentEvent(
        id="e2", type=EventType.FINAL_ANSWER, step_index=1, agent_name="answer", output="10 USD"
    )
    t = failed(
        ev(0, EventType.USER_INPUT, None, input="Price?"),
        ev(1, EventType.LLM_RESPONSE, "answer", output="10 USD"),
        final,
    )
    found = HeuristicAttributor().attribute(t, [])
    assert [(h.agent_name, h.step_index) for h in found] == [("answer", 1)]


def test_with_no_finding_a_worker_whose_words_the_answer_carries_is_named() -> None:
    """A supervisor routes, a worker converts to the wrong currency, the supervisor
    passes it on: with no detector firing, the worker's step that first said what
    the answer carries is the candidate, not the supervisor's first routing; a run
    of one agent has no such candidate."""
    events = [
        ev(0, EventType.USER_INPUT, None, input="Convert 100 USD to EUR"),
        ev(1, EventType.LLM_RESPONSE, "supervisor", output="route mathematician"),
        ev(2, EventType.TOOL_CALL, "mathematician", input={"amount": 100, "currency": "GBP"}),
        ev(3, EventType.LLM_RESPONSE, "mathematician", output="100 USD is 90.00 GBP"),
        ev(4, EventType.FINAL_ANSWER, "supervisor", output="The result: 90.00 GBP"),
    ]
    found = HeuristicAttributor().attribute(failed(*events), [])
    assert (found[0].agent_name, found[0].step_index) == ("mathematician", 2)
    assert "the final answer carries what this step of mathematician" in (found[0].rationale or "")
    alone = [e.model_copy(update={"agent_name": "agent"}) if e.agent_name else e for e in events]
    names = [
        (h.agent_name, h.step_index) for h in HeuristicAttributor().attribute(failed(*alone), [])
    ]
    assert names == [("agent", 1), ("agent", 4)]
    # an answer no agent gave (a graph's final state) has no "other" agent to look
    # past: before, the node that wrote it was named, as if another agent had answered
    unsigned = [*events[:4], events[4].model_copy(update={"agent_name": None})]
    found = HeuristicAttributor().attribute(failed(*unsigned), [])
    assert not any("the final answer carries" in (h.rationale or "") for h in found)


def test_a_step_the_reasons_words_point_at_is_said_to_be_a_guess() -> None:
    """No rule located it: the summary and the text report say so, as for the
    default places (before, it read "Most likely root cause")."""
    from agentdebug.report import render_text

    t = failed_with("bad total 'A: $10; B: UNKNOWN; C: $10'", *PRICES)
    report = diagnose(t)
    assert report.root_cause is not None and report.root_cause.step_index == 2
    assert report.summary is not None and "No rule located the cause; as a default guess" in (
        report.summary
    )
    assert "Root cause (a default guess: no rule located it)" in render_text(report, t)
