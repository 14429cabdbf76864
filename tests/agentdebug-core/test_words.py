"""Where no detector fired: the first model call that was given what the failure's
reason names and did not pass it on (a planner that drops a requirement, a writer
that leaves out what a researcher found), said to be a guess."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.attribute import HeuristicAttributor
from agentdebug.attribute.heuristic import DEFAULT_GUESS
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

REQUEST = "Compare the Kettle Pro and Kettle Max: price AND shipping time for each."


def call(i: int, agent: str, given: str, said: str) -> AgentEvent:
    return ev(
        i,
        EventType.LLM_RESPONSE,
        agent,
        input=[{"role": "user", "content": given}],
        output={"role": "assistant", "content": said},
    )


def failed_with(reason: str, *events: AgentEvent) -> AgentTrajectory:
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def top(run: AgentTrajectory) -> Any:
    return HeuristicAttributor().attribute(run, [])[0]


def test_the_planner_that_dropped_a_requirement_is_the_guess() -> None:
    run = failed_with(
        "the answer does not give the shipping times the user asked for",
        ev(0, EventType.USER_INPUT, None, input=REQUEST),
        call(
            1,
            "planner",
            REQUEST,
            '{"steps": ["get price of Kettle Pro", "get price of Kettle Max"]}',
        ),
        call(
            2,
            "researcher",
            "get price of Kettle Pro and Kettle Max",
            "Pro: $89; Max: $119, both in stock",
        ),
        call(
            3,
            "writer",
            f"{REQUEST}\nNotes: Pro $89, Max $119",
            "Kettle Pro costs $89 and Kettle Max costs $119.",
        ),
        ev(
            4,
            EventType.FINAL_ANSWER,
            "writer",
            output="Kettle Pro costs $89 and Kettle Max costs $119.",
        ),
    )
    found = top(run)
    assert (found.agent_name, found.step_index) == ("planner", 1)
    assert found.metadata.get(DEFAULT_GUESS) is True
    assert found.rationale.endswith("did not pass on, nor did any step after it ('shipping')")


def test_the_writer_that_left_out_what_the_researcher_found_is_the_guess() -> None:
    found_text = "LH400 2025-03-14: CANCELLED (crew shortage). Rebooked on LH402."
    run = failed_with(
        "the reply says the flight is on schedule, but it was cancelled and rebooked on LH402",
        ev(0, EventType.USER_INPUT, None, input="Is my flight LH400 on time?"),
        call(1, "research", "Is my flight LH400 on time?", f"Status found: {found_text}"),
        call(
            2,
            "writer",
            f"Notes: {found_text}",
            "Good news: your flight LH400 is on schedule today.",
        ),
        ev(
            3,
            EventType.FINAL_ANSWER,
            "writer",
            output="Good news: your flight LH400 is on schedule today.",
        ),
    )
    found = top(run)
    assert (found.agent_name, found.step_index) == ("writer", 2)
    assert "'cancelled'" in found.rationale and "'lh402'" in found.rationale


@pytest.mark.parametrize(
    "events",
    [
        # a router given the fact has nothing to pass on: its label is no drop
        (
            ev(0, EventType.USER_INPUT, None, input=REQUEST),
            call(1, "router", REQUEST, "route: shop"),
        ),
        # the fact reached the answer: nothing was dropped
        (
            ev(0, EventType.USER_INPUT, None, input=REQUEST),
            call(1, "writer", REQUEST, "Both ship in 2 days; the shipping time is the same."),
        ),
    ],
)
def test_what_is_not_a_dropped_fact(events: tuple[AgentEvent, ...]) -> None:
    run = failed_with("the answer does not give the shipping times the user asked for", *events)
    assert not any(
        "did not pass on" in (h.rationale or "") for h in HeuristicAttributor().attribute(run, [])
    )


def test_a_reason_of_words_said_of_any_run_names_no_fact() -> None:
    run = failed_with(
        "the final answer should have been given",
        ev(0, EventType.USER_INPUT, None, input="the final answer should be given here"),
        call(
            1,
            "writer",
            "the final answer should be given",
            "Here is a long reply about something else.",
        ),
    )
    assert not any(
        "did not pass on" in (h.rationale or "") for h in HeuristicAttributor().attribute(run, [])
    )


def test_words_of_any_reason_and_of_every_prompt_name_no_fact() -> None:
    """Before the review: "doesn't" read as the word "doesn", "expected format" as
    facts, and a system prompt's words as the run's data, so a search call that
    happened to be given them was the first guess."""
    system = "You are precise. Always match the expected format. Use the search results."
    events = [
        ev(0, EventType.USER_INPUT, None, input="What is the capital of France?"),
        ev(
            1,
            EventType.LLM_RESPONSE,
            "agent",
            input=[{"role": "system", "content": system}],
            output={"content": "I will search for the capital of France right now."},
        ),
        ev(
            2,
            EventType.LLM_RESPONSE,
            "agent",
            input=[{"role": "system", "content": system}],
            output={"content": "The capital of France is Lyon, according to the results."},
        ),
        ev(3, EventType.FINAL_ANSWER, "agent", output="Lyon"),
    ]
    for reason in ("answer doesn't match the expected format", "expected format not followed"):
        found = HeuristicAttributor().attribute(failed_with(reason, *events), [])
        assert not any("did not pass on" in (h.rationale or "") for h in found)
    found = HeuristicAttributor().attribute(
        failed_with("answer doesn't match: got 'Lyon'", *events), []
    )
    assert found[0].step_index == 2 and "names what this step said" in found[0].rationale


@pytest.mark.parametrize(
    ("reason", "word"),
    [
        ("headline says 2023; the update is about 2025", "'2023'"),  # 2025: the task's
        ("the post carries the hashtag #SeriesA but it was the Series B", "'seriesa'"),
    ],
)
def test_with_no_finding_a_value_the_reason_names_unquoted_points_at_its_step(
    reason: str, word: str
) -> None:
    """A held-out probe's controls: the reason names the wrong value without quotes,
    and the answer holds it (before, the first step was guessed)."""
    t = failed_with(
        reason,
        ev(0, EventType.USER_INPUT, "human", input="one line on our 2025 Series B update"),
        ev(1, EventType.LLM_RESPONSE, "writer", output="Our 2025 Series B update is out."),
        ev(2, EventType.LLM_RESPONSE, "critic", output="APPROVED"),
        ev(3, EventType.LLM_RESPONSE, "tagger", output="2023 update #SeriesA"),
        ev(
            4,
            EventType.FINAL_ANSWER,
            None,
            output={"text": "Our 2025 Series B update is out.", "tags": "2023 update #SeriesA"},
        ),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert (hyps[0].agent_name, hyps[0].step_index) == ("tagger", 3)
    assert hyps[0].rationale == (
        "no detector fired; the failure's reason names what this step said and no other "
        f"step did ({word})"
    )


def test_a_failed_pipeline_of_code_nodes_still_gets_a_place_to_look() -> None:
    """No model, no tool call, the graph's state as the answer (no agent gave it):
    the nodes' updates are the run's decisions, so the report has a guess, said to be
    one, instead of no root cause at all. A node that wrote nothing decided nothing."""
    events = [
        ev(0, EventType.USER_INPUT, None, input={"week": "2024-04-08"}),
        *node(1, "check", {}),
        *node(2, "localize", {"shifts": [{"start": "2024-04-15T00:00:00-05:00"}]}),
        *node(3, "pay", {"gross": 528.0}),
        ev(3, EventType.FINAL_ANSWER, None, output={"gross": 528.0}),
    ]
    hypotheses = HeuristicAttributor().attribute(failed_with("paid $54.00 short", *events), [])
    assert [(h.agent_name, h.step_index) for h in hypotheses] == [("localize", 2), ("pay", 3)]
    assert all(h.metadata.get(DEFAULT_GUESS) for h in hypotheses)


def test_in_a_pipeline_of_three_code_nodes_the_guess_is_the_first_after_the_load() -> None:
    """A loader reads the run's input from outside; the step after it is the first
    that worked on what it was given (a review found the loader guessed every time)."""
    events = [
        ev(0, EventType.USER_INPUT, None, input={"file": "sales.csv"}),
        *node(1, "load_csv", {"rows": [{"region": "EU", "amount": 391000}]}),
        *node(2, "aggregate", {"total": 39100}),
        *node(3, "report", {"text": "Sales: 39,100"}),
        ev(3, EventType.FINAL_ANSWER, None, output={"text": "Sales: 39,100"}),
    ]
    (first, last) = HeuristicAttributor().attribute(failed_with("the total is wrong", *events), [])
    assert (first.agent_name, first.step_index) == ("aggregate", 2)
    assert first.rationale.startswith("no detector fired; in a pipeline of code nodes")
    assert (last.agent_name, last.step_index) == ("report", 3)


def test_a_code_pipeline_whose_steps_mostly_failed_still_gets_its_guess() -> None:
    """Three node ends, two of them failed: the loader's skip does not run past the
    one left (a review found an IndexError)."""
    events = [
        ev(0, EventType.USER_INPUT, None, input={"file": "sales.csv"}),
        *node(1, "load", {"rows": [1, 2]}),
        ev(2, EventType.AGENT_END, "aggregate", output={"total": 3}, error="boom"),
        ev(3, EventType.AGENT_END, "report", output={"text": "3"}, error="boom"),
    ]
    (guess, *_) = HeuristicAttributor().attribute(failed_with("the total is wrong", *events), [])
    assert (guess.agent_name, guess.step_index) == ("load", 1)
    assert (
        guess.rationale == "no detector fired; the first decision commits the run to its approach"
    )


@pytest.mark.parametrize("relayed", ["about 4895 metres", "about 4,895 metres"])
def test_a_figure_relayed_without_its_thousands_comma_is_still_the_workers(relayed: str) -> None:
    """A worker says "4,895 m" (wrong); the supervisor relays it as "4895" and the
    reason names 4895: the worker said it first (before, the comma hid that, and the
    supervisor that relayed it was blamed; a review's find)."""
    t = failed_with(
        "the summit height 4895 is wrong",
        ev(0, EventType.USER_INPUT, "human", input="How high is Mont Blanc?"),
        ev(1, EventType.LLM_RESPONSE, "supervisor", output="Ask the researcher."),
        ev(2, EventType.LLM_RESPONSE, "researcher", output="Mont Blanc: 4,895 m."),
        ev(3, EventType.LLM_RESPONSE, "supervisor", output=f"Mont Blanc is {relayed} high."),
        ev(4, EventType.FINAL_ANSWER, "supervisor", output=f"Mont Blanc is {relayed} high."),
    )
    hyps = HeuristicAttributor().attribute(t, [])
    assert (hyps[0].agent_name, hyps[0].step_index) == ("researcher", 2)


@pytest.mark.parametrize(
    "reason",
    [
        "the capital of Germany is missing from '{answer}'",
        "Germany's capital is wrong in '{answer}'",  # (the name opening the reason)
        "wrong capital for germany in '{answer}'",  # (a name the answer writes, in lower case)
        "'{answer}': Germany is wrong",
    ],
)
def test_of_two_visits_to_a_worker_the_one_the_reason_names_outside_its_quote_is_blamed(
    reason: str,
) -> None:
    """A supervisor asks the researcher twice; the answer joins both facts, and the
    reason quotes it and says which part is wrong ("the capital of Germany"). The
    Germany visit is blamed, not the France visit that said more of the answer first
    (a review's find: the rerun then forked before the right visit too)."""
    t = failed_with(
        reason.format(answer="fact: France -> Paris; fact: Germany -> Munich"),
        ev(0, EventType.USER_INPUT, "human", input="capitals of France and Germany"),
        ev(1, EventType.LLM_RESPONSE, "supervisor", output="ask: France"),
        ev(2, EventType.LLM_RESPONSE, "researcher", output="fact: France -> Paris"),
        ev(3, EventType.LLM_RESPONSE, "supervisor", output="ask: Germany"),
        ev(4, EventType.LLM_RESPONSE, "researcher", output="fact: Germany -> Munich"),
        ev(5, EventType.LLM_RESPONSE, "supervisor", output="done"),
        ev(6, EventType.FINAL_ANSWER, "supervisor",
           output="fact: France -> Paris; fact: Germany -> Munich"),
    )  # fmt: skip
    hyps = HeuristicAttributor().attribute(t, [])
    assert (hyps[0].agent_name, hyps[0].step_index) == ("researcher", 4)


def test_a_common_word_the_reason_says_outside_its_quote_points_at_no_step() -> None:
    """A planner that said "capital" is not the answer's origin because the reason
    says "capital" too; the visit that said "Germany" and "Munich" is (a review's
    find after the rule above first took any word)."""
    t = failed_with(
        "'the capital of Germany is Munich' is wrong: the capital of Germany is Berlin",
        ev(0, EventType.USER_INPUT, "human", input="capitals of France and Germany"),
        ev(1, EventType.LLM_RESPONSE, "planner", output="plan: look up each country's capital"),
        ev(2, EventType.LLM_RESPONSE, "researcher", output="France -> Paris"),
        ev(3, EventType.LLM_RESPONSE, "researcher", output="Germany -> Munich"),
        ev(4, EventType.FINAL_ANSWER, "supervisor",
           output="the capital of France is Paris; the capital of Germany is Munich"),
    )  # fmt: skip
    hyps = HeuristicAttributor().attribute(t, [])
    assert (hyps[0].agent_name, hyps[0].step_index) == ("researcher", 3)
