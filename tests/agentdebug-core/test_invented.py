"""A final answer giving a figure no tool returned, after the lookup that was to give
it failed on the task's own arguments: blamed on the answer (it invented the figure),
not on the call (which was right, and whose "retry" fix would leave the fault)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

GOAL = "How much did order A123 cost?"
FAILED = "Error: order A123 not found"


def lookup(i: int, order_id: str, result: str, *, parent: int) -> list[AgentEvent]:
    meta = {"tool_name": "lookup_order"}
    return [
        ev(i, EventType.TOOL_CALL, "agent", input={"order_id": order_id}, metadata=meta),
        ev(
            i + 1,
            EventType.TOOL_RESULT,
            "agent",
            output=result,
            parent_id=f"e{parent}",
            metadata=meta,
        ),
    ]


def order_run(
    answer: str,
    *,
    goal: str = GOAL,
    calls: list[tuple[str, str]] | None = None,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    events: list[AgentEvent] = [ev(0, EventType.USER_INPUT, None, input=goal)]
    for order_id, result in calls or [("A123", FAILED)]:
        events += lookup(len(events), order_id, result, parent=len(events))
    events.append(ev(len(events), EventType.FINAL_ANSWER, "agent", output=answer))
    run = traj(*events)
    return run.model_copy(
        update={"goal": goal, "outcome": Outcome(status=status, reason="wrong total")}
    )


def invented(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "invented_after_failure"]


def test_a_figure_after_a_failed_lookup_is_blamed_on_the_answer_with_a_fix() -> None:
    run = order_run("Order A123 cost $24.00.")
    report = diagnose(run)
    (found,) = invented(run)
    assert found.mode_id == "reflection.hallucinated_fact"
    assert found.message == (
        "the final answer gives $24.00, which no tool returned: the lookup_order call at "
        f"step 2 failed ({FAILED}) and the answer did not say so"
    )
    assert [e.quote for e in found.evidence] == ["Order A123 cost $24.00.", FAILED]
    root = report.root_cause
    assert root is not None
    assert (root.step_index, root.mode_id) == (3, "reflection.hallucinated_fact")
    assert report.fix is not None
    assert report.fix.directive == (
        "At step 3, agent: the answer gave $24.00, which no tool returned (lookup_order "
        f'failed at step 2: "{FAILED}"). Do not answer with a figure no tool gave: get it '
        "another way (another tool, other arguments), or say that the lookup failed."
    )
    # the tool that failed is still considered, below the answer (not the call to it)
    assert [h.step_index for h in report.hypotheses][:2] == [3, 2]


def test_without_the_rule_the_call_was_blamed(monkeypatch: pytest.MonkeyPatch) -> None:
    # (what the rule changes: the same run, diagnosed by the other rules alone)
    from agentdebug.detect import pack

    others = [r for r in pack.RULES if r.id != "invented_after_failure"]
    monkeypatch.setattr(pack, "RULES", others)
    report = diagnose(order_run("Order A123 cost $24.00."))
    assert report.root_cause is not None and report.root_cause.step_index == 1


@pytest.mark.parametrize(
    "outage", ["503 Service Unavailable", "TimeoutError: the orders service timed out"]
)
def test_a_figure_after_an_outage_is_blamed_on_the_answer(outage: str) -> None:
    run = order_run("Order A123 cost $24.00.", calls=[("A123", f"Error: {outage}")])
    assert len(invented(run)) == 1
    root = diagnose(run).root_cause
    assert root is not None and (root.step_index, root.mode_id) == (
        3,
        "reflection.hallucinated_fact",
    )


@pytest.mark.parametrize(
    ("answer", "goal", "calls", "status"),
    [
        # the answer says it could not get the figure, in words of its own
        (
            "The rate service is unavailable right now; please try again in 30 minutes.",
            GOAL,
            None,
            OutcomeStatus.FAILURE,
        ),
        (
            "Sorry, that isn't available. Call the shop at +47 22 33 44 55.",
            GOAL,
            None,
            OutcomeStatus.FAILURE,
        ),
        # the tool rejected the call's argument (task words given to the wrong tool, or
        # a date not reformatted): the call is the likelier cause
        (
            "Order A123 cost $24.00.",
            GOAL,
            [("A123", "Error: not an e-mail address: A123")],
            OutcomeStatus.FAILURE,
        ),
        (
            "Order A123 cost $24.00.",
            GOAL,
            [("A123", "ValueError: date must be YYYY-MM-DD")],
            OutcomeStatus.FAILURE,
        ),
        # an argument that is only part of a word of the task is the agent's own
        ("Order A1234 cost $24.00.", "How much did order A1234 cost?", None, OutcomeStatus.FAILURE),
        # a number a tool returned as the end of a range ("120-180")
        (
            "Rooms at the Oslo hotel cost 120 EUR a night.",
            GOAL,
            [("B7", "rooms from 120-180 EUR"), ("A123", FAILED)],
            OutcomeStatus.FAILURE,
        ),
        # a number a tool returned, restated, rounded or scaled
        (
            "About 1.2 million people live there; order A123 cost about $42.",
            GOAL,
            [("B7", "population: 1,200,000; price: 41.96"), ("A123", FAILED)],
            OutcomeStatus.FAILURE,
        ),
        # the answer says the lookup failed
        ("The lookup failed; it may have cost $24.00.", GOAL, None, OutcomeStatus.FAILURE),
        ("I could not find order A123 (it was about $24).", GOAL, None, OutcomeStatus.FAILURE),
        # the call's arguments were the agent's own, not the task's: the call is the cause
        ("Order A123 cost $24.00.", GOAL, [("A124", FAILED)], OutcomeStatus.FAILURE),
        # a later lookup of the same tool succeeded
        (
            "Order A123 cost $24.00.",
            GOAL,
            [("A123", FAILED), ("A123", "order A123: $42.00")],
            OutcomeStatus.FAILURE,
        ),
        # the figure was in the task
        ("You paid $24.", "I paid $24 for A123; what was it?", None, OutcomeStatus.FAILURE),
        # the figure is computed from what an earlier lookup returned
        (
            "Orders A123 and B7 cost $60.00 together.",
            "What did orders B7 and A123 cost?",
            [("B7", "items: $42.00 and $18.00"), ("A123", FAILED)],
            OutcomeStatus.FAILURE,
        ),
        # a single digit is no figure to invent ("2 items")
        ("Order A123 has 2 items.", GOAL, None, OutcomeStatus.FAILURE),
        # a run that succeeded
        ("Order A123 cost $24.00.", GOAL, None, OutcomeStatus.SUCCESS),
    ],
)
def test_what_is_not_an_invented_figure(
    answer: str, goal: str, calls: list[tuple[str, str]] | None, status: OutcomeStatus
) -> None:
    assert not invented(order_run(answer, goal=goal, calls=calls, status=status))


@pytest.mark.parametrize("nothing", ["[]", "", "{}", "null", "No results found.", "0 results"])
def test_a_figure_after_a_lookup_that_found_nothing_is_blamed_on_the_answer(nothing: str) -> None:
    run = order_run("Order A123 cost $24.00.", calls=[("A123", nothing)])
    report = diagnose(run)
    (found,) = invented(run)
    assert found.message.startswith(
        "the final answer gives $24.00, which no tool returned: the lookup_order call at "
        "step 2 returned nothing"
    )
    root = report.root_cause
    assert root is not None and (root.step_index, root.mode_id) == (
        3,
        "reflection.hallucinated_fact",
    )
    assert report.fix is not None and report.fix.directive.endswith(
        "get it another way (another tool, other arguments), or say that nothing was found."
    )


def test_a_lookup_of_the_agent_s_own_making_that_found_nothing_is_read_too() -> None:
    """A query the agent wrote (SQL, not the task's words) that found nothing: no
    fault of the call's is in sight, and the answer still invented its figure (a
    held-out probe's miss: no finding before, and the first step was guessed)."""
    sql = "SELECT total FROM orders WHERE id = 'A-123'"
    run = order_run("Order A123 cost $24.00.", calls=[(sql, "[]")])
    (found,) = invented(run)
    assert found.step_index == 3
    root = diagnose(run).root_cause
    assert root is not None and (root.step_index, root.mode_id) == (
        3,
        "reflection.hallucinated_fact",
    )


def test_an_empty_query_of_the_agent_s_own_after_figures_were_found_is_not_read() -> None:
    # (a review's find: three orders summed, then a query of refunds that found none)
    sql = "SELECT amount FROM refunds WHERE order_id IN (1, 2, 3)"
    calls = [("A123", '{"total": 12.5}'), ("A124", '{"total": 20}'), (sql, "[]")]
    assert not invented(order_run("The total is $62.75; no refunds.", calls=calls))


@pytest.mark.parametrize(
    "result",
    ['[{"order": "A123", "total": 42}]', "no results for A124, but A123 costs 42", "results: 0"],
)
def test_a_lookup_that_found_something_is_not_nothing(result: str) -> None:
    assert not invented(order_run("Order A123 cost $24.00.", calls=[("A123", result)]))


def test_a_final_state_no_agent_gave_is_blamed_on_the_model_call_that_said_the_figure() -> None:
    """A graph whose state is a plain dict records its final state, with no agent, as
    the final answer: the figure is blamed on the node's model call that wrote it
    (before, on "unknown agent")."""
    run = order_run("Order A123 cost $24.00.", calls=[("A123", "[]")])
    said = ev(
        3,
        EventType.LLM_RESPONSE,
        "writer",
        input=[{"role": "user", "content": GOAL}],
        output={"content": "Order A123 cost $24.00."},
    )
    final = run.events[-1].model_copy(
        update={
            "id": "e4",
            "step_index": 3,
            "agent_name": None,
            "output": {"reply": "Order A123 cost $24.00."},
        }
    )
    run = run.model_copy(update={"events": [*run.events[:-1], said, final]})
    (found,) = invented(run)
    assert (found.event_id, found.agent_name) == ("e3", "writer")
    root = diagnose(run).root_cause
    assert root is not None and root.agent_name == "writer"


def parallel_run(answer: str, outcomes: dict[str, str], reason: str) -> AgentTrajectory:
    """A model answer asking for one lookup per order at once (as a prebuilt agent's
    tool node runs them), the results, then the model's final answer."""
    goal = "What did orders " + " and ".join(outcomes) + " cost?"
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input=goal),
        ev(1, EventType.LLM_RESPONSE, "agent", output={"tool_calls": list(outcomes)}),
    ]
    for order_id, result in outcomes.items():
        i = len(events)
        meta = {"tool_name": "order_total"}
        events += [
            ev(i, EventType.TOOL_CALL, "agent", input={"order_id": order_id}, metadata=meta,
               parent_id="e1"),
            ev(i + 1, EventType.TOOL_RESULT, "tools", output=result, parent_id=f"e{i}",
               metadata=meta),
        ]  # fmt: skip
    events.append(ev(len(events), EventType.FINAL_ANSWER, "agent", output=answer))
    run = traj(*events)
    return run.model_copy(
        update={"goal": goal, "outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


@pytest.mark.parametrize("failing", ["A123", "B456"])
def test_a_failed_lookup_among_calls_made_at_once_is_read_wherever_it_ran(failing: str) -> None:
    """The answer's figure for the order whose lookup failed is blamed on the answer,
    also when a sibling call ran after it and succeeded (before, only the last
    result was read, and the call was blamed with a "retry" fix)."""
    prices = {"A123": "$24.00", "B456": "$10.00"}
    outcomes = {
        o: ("ConnectionError: the orders service is down" if o == failing else prices[o])
        for o in prices
    }
    answer = "Order A123 cost $24.00 and order B456 cost $10.00."
    run = parallel_run(answer, outcomes, "a total is wrong")
    (found,) = invented(run)
    assert "failed (ConnectionError: the orders service is down)" in found.message
    assert found.message.startswith(f"the final answer gives {prices[failing]}")
    root = diagnose(run).root_cause
    assert root is not None and root.mode_id == "reflection.hallucinated_fact"


def test_a_figure_the_reason_names_counts_though_other_figures_make_it_by_chance() -> None:
    """20 is 30 - 10, two prices the other lookups returned: a figure is not taken as
    made of them when the failure's reason names it."""
    outcomes = {"A1": "10 EUR", "B2": "Error: TimeoutError: pricing timed out", "C3": "30 EUR"}
    answer = "A1 costs 10 EUR, B2 costs 20 EUR, C3 costs 30 EUR."
    assert not invented(parallel_run(answer, outcomes, "a price is wrong"))
    (found,) = invented(parallel_run(answer, outcomes, "B2's price 20 EUR is invented"))
    assert found.message.startswith("the final answer gives 20, which no tool returned")


@pytest.mark.parametrize(
    "said",
    [
        "LookupError: no total available for order A123",
        "could not find order A123",
        "Unable to locate order A123",
    ],
)
def test_a_lookup_in_its_own_words_that_found_nothing_is_read_as_not_found(said: str) -> None:
    run = order_run("Order A123 cost $24.00.", calls=[("A123", f"Error: {said}")])
    (found,) = invented(run)
    assert found.mode_id == "reflection.hallucinated_fact"


@pytest.mark.parametrize(
    "said",
    ["No API key found for the weather service", "No healthy upstream available",
     "No seats available on AF123", "Could not find a version that satisfies foo"],
)  # fmt: skip
def test_such_words_are_read_as_nothing_found_only_for_an_invented_figure(said: str) -> None:
    """A review's find: read as "not found" everywhere, a missing API key got the fix
    "locate the resource first"; elsewhere they stay tool errors."""
    from agentdebug.detect.signals import classify_error

    assert classify_error(said) == "system.tool_error"
    assert classify_error(f"LookupError: {said}") == "system.resource_not_found"


@pytest.mark.parametrize("order", ["A1, B2 and C3", "A1, C3 and B2"])
def test_a_named_figure_that_is_the_sum_of_the_other_results_is_not_invented(order: str) -> None:
    """A review's find: "40 EUR in total" is 10 + 30, the two lookups that worked;
    the reason names 40, but it is their total, not a price given for B2, whose
    lookup failed: not "a figure no tool returned", in whatever order it names them."""
    outcomes = {"A1": "10 EUR", "B2": "Error: TimeoutError: pricing timed out", "C3": "30 EUR"}
    answer = f"Orders {order} cost 40 EUR in total."
    assert not invented(parallel_run(answer, outcomes, "the total 40 EUR leaves out B2"))


@pytest.mark.parametrize(
    "answer",
    ["10 EUR for A1, 20 EUR for B2, 30 EUR for C3.", "Prices: 10 EUR (A1), 20 EUR (B2), 30 EUR (C3).",
     "B2 is 20 EUR; A1 is 10 EUR and C3 is 30 EUR."],
)  # fmt: skip
def test_a_named_figure_is_read_wherever_the_answer_puts_its_argument(answer: str) -> None:
    """20 (30 - 10 by chance) given for B2 before or after naming it (a review's find
    of a first fix that read only the name before the figure)."""
    outcomes = {"A1": "10 EUR", "B2": "Error: TimeoutError: pricing timed out", "C3": "30 EUR"}
    (found,) = invented(parallel_run(answer, outcomes, "B2's price 20 EUR is invented"))
    assert found.message.startswith("the final answer gives 20")
