"""Where no detector fired, the guess in a run of one tool-using agent: lookups
commit the run to nothing, so the first step that acted on what they found is the
likeliest decisive one (a booking after a search, a return created after an order
lookup); of a fan-out's branches, the one whose output the failure names."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.attribute import HeuristicAttributor
from agentdebug.attribute.heuristic import DEFAULT_GUESS, FIRST_ACT, FIRST_DECISION
from agentdebug.detect.claimed import only_gathers
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

ASK = "Book me a table for four tonight; my father uses a wheelchair."


def turn(i: int, *calls: tuple[str, dict[str, Any]], said: str = "", **kw: Any) -> AgentEvent:
    """The agent's model turn at step ``i``: its tool calls, or its answer."""
    out: dict[str, Any] = {"role": "assistant", "content": said}
    if calls:
        out["tool_calls"] = [{"name": n, "args": a, "id": f"c{i}{n}"} for n, a in calls]
    return ev(i, EventType.LLM_RESPONSE, "concierge", output=out, **kw)


def result(i: int, text: str) -> AgentEvent:
    return ev(i, EventType.TOOL_RESULT, "tools", output=text)


def failed(reason: str, *events: AgentEvent) -> AgentTrajectory:
    return traj(*events).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)}
    )


def guesses(run: AgentTrajectory) -> list[tuple[str | None, int | None, str]]:
    return [
        (h.agent_name, h.step_index, h.rationale)
        for h in HeuristicAttributor().attribute(run, [])
        if h.metadata.get(DEFAULT_GUESS)
    ]


def booked(*middle: AgentEvent, reason: str = "the guest could not reach the table") -> Any:
    return failed(
        reason,
        ev(0, EventType.USER_INPUT, None, input=ASK),
        turn(1, ("check_availability", {"party": 4})),
        result(2, "T4 mezzanine (stairs only); T9 ground floor, step-free"),
        *middle,
        turn(5, said="Done: table T4 at 19:30."),
    )


def test_after_lookups_the_first_step_that_acted_is_the_guess() -> None:
    run = booked(turn(3, ("reserve_table", {"table": "T4"})), result(4, "reserved T4"))
    found = guesses(run)
    assert found[0][:2] == ("concierge", 3)
    assert found[0][2] == FIRST_ACT
    # the first decision stays a place to look, after it
    assert ("concierge", 1, FIRST_DECISION) in found[1:]


def test_a_run_that_only_looked_things_up_keeps_its_first_decision() -> None:
    run = booked(turn(3, ("search_tables", {"area": "ground"})), result(4, "T9"))
    # its answer acted: it said what it found
    assert guesses(run)[0][:2] == ("concierge", 5)
    only_lookups = failed(
        "no table was booked",
        ev(0, EventType.USER_INPUT, None, input=ASK),
        turn(1, ("check_availability", {"party": 4})),
        result(2, "nothing free"),
        turn(3, ("get_waitlist", {})),
    )
    assert guesses(only_lookups)[0][:3] == ("concierge", 1, FIRST_DECISION)


def test_a_computation_commits_to_figures_and_is_no_lookup() -> None:
    assert only_gathers("get_policy") and only_gathers("searchFlights")
    assert only_gathers("check_availability") and not only_gathers("check_in_guest")
    assert not only_gathers("compute_settlement") and not only_gathers("calc_duty")
    assert not only_gathers("book_session") and not only_gathers("archive_messages")
    # a lookup's verb first, and no other action joined to it (a review's names)
    for acts in (
        "find_and_book",
        "get_or_create_user",
        "verify_and_pay",
        "list_for_sale",
        "sql_db_query",
        "mark_as_read",
        "lookup_and_cancel_order",
        "count_vote",
    ):
        assert not only_gathers(acts), acts  # fmt: skip


def test_a_lookup_that_asked_for_what_failed_is_where_the_run_went_wrong() -> None:
    """The search asked for the 15th where the trip was on the 14th: the booking after
    it was faithful to what it found (before this, the first act was the guess)."""
    run = failed(
        "the flight booked is on 2024-05-15; the trip was on 2024-05-14",
        ev(0, EventType.USER_INPUT, None, input="a flight to Rome on 2024-05-14"),
        turn(1, ("search_flights", {"to": "Rome", "date": "2024-05-15"})),
        result(2, "AZ 61 2024-05-15 09:00"),
        turn(3, ("book_flight", {"flight": "AZ 61"})),
        result(4, "booked AZ 61"),
        turn(5, said="Booked AZ 61."),
    )
    assert guesses(run)[0][:3] == ("concierge", 1, FIRST_DECISION)


def test_what_a_lookup_dropped_stays_with_it_when_it_asked_for_what_failed() -> None:
    first = turn(1, ("search_flights", {"day": "Wednesday"}), said="Searching flights to Rome now.")
    first = first.model_copy(update={"input": [{"role": "user", "content": "Rome on Tuesday"}]})
    act = turn(3, ("book_flight", {"flight": "AZ 61"}), metadata={"prompt_new_from": 2})
    run = failed(
        "the customer wanted Tuesday but got a Wednesday booking",
        ev(0, EventType.USER_INPUT, None, input="Rome on Tuesday"),
        first,
        result(2, "AZ 61 Wednesday"),
        act,
        turn(5, said="Booked AZ 61 for Wednesday."),
    )
    top = guesses(run)[0]
    assert top[:2] == ("concierge", 1) and "did not pass on" in top[2]


@pytest.mark.parametrize("outcome", [OutcomeStatus.SUCCESS, OutcomeStatus.UNKNOWN])
def test_no_guess_where_no_failure_is_known(outcome: OutcomeStatus) -> None:
    run = booked(turn(3, ("reserve_table", {"table": "T4"})), result(4, "reserved T4"))
    run = run.model_copy(update={"outcome": Outcome(status=outcome)})
    assert guesses(run) == []


def test_what_a_lookup_was_given_and_did_not_pass_on_is_the_acts_to_use() -> None:
    """The request's words reach the lookup's prompt alone (each later call records
    only what is new, ``prompt_new_from``); the lookup had no use for them, the call
    that booked did."""
    first = turn(1, ("find_studio_slots", {"hours": 2}))
    first = first.model_copy(update={"input": [{"role": "user", "content": "a video episode"}]})
    act = turn(3, ("book_session", {"slot": "B-1000"}), metadata={"prompt_new_from": 2})
    act = act.model_copy(update={"input": [{"role": "tool", "content": "A-0900 cameras; B-1000"}]})
    run = failed(
        "the call sheet has no video crew for this episode",
        ev(0, EventType.USER_INPUT, None, input="a video episode"),
        first,
        result(2, "A-0900 cameras; B-1000"),
        act,
        result(4, "booked B-1000"),
        turn(5, said="Booked B-1000."),
    )
    top = guesses(run)[0]
    assert top[:2] == ("concierge", 3) and "did not pass on" in top[2]


def test_a_quoted_word_a_tool_gave_first_is_relayed_not_said() -> None:
    run = failed(
        "my calendar has 'Training: easy run' every morning at 45 minutes",
        ev(0, EventType.USER_INPUT, None, input="plan my training, 30 minutes a day"),
        turn(1, ("get_client_profile", {})),
        result(2, "max 30 minutes"),
        turn(3, ("build_training_block", {"max_session_minutes": 45})),
        result(4, "Mon: Training: easy run 45 min"),
        turn(5, said="Your plan starts Monday with an easy run."),
    )
    assert guesses(run)[0][:3] == ("concierge", 3, FIRST_ACT)


def branches(*said: str, fan_out: bool = True) -> list[AgentEvent]:
    """A fan-out: ``fan`` starts one ``worker`` per answer (each start's parent the
    fan's start, marked a branch), each worker's model answering; without
    ``fan_out``, the turns of a loop inside a subgraph ``fan`` runs."""
    mark = {"send": True} if fan_out else {}
    events = [ev(1, EventType.AGENT_START, "fan").model_copy(update={"id": "fan"})]
    for k, text in enumerate(said, start=2):
        start = ev(k, EventType.AGENT_START, "worker", parent_id="fan", metadata=mark)
        events.append(start.model_copy(update={"id": f"s{k}"}))
        events.append(
            ev(k, EventType.LLM_RESPONSE, "worker", parent_id=f"s{k}",
               output={"role": "assistant", "content": text})
        )  # fmt: skip
    return events


def test_of_a_fan_outs_branches_the_one_the_failure_names_is_the_guess() -> None:
    run = failed(
        "a city has no data",
        ev(0, EventType.USER_INPUT, None, input="weather for Paris, Lyon, Nice"),
        *branches("Paris: 20C", "Lyon: no data", "Nice: 20C"),
    )
    found = guesses(run)
    assert found[0][:2] == ("worker", 3) and "parallel branches" in found[0][2]
    assert ("worker", 2, FIRST_DECISION) in found[1:]  # (the first, kept after it)


def test_words_any_reason_says_pick_no_branch() -> None:
    """'the', 'has', 'for' and figures name nothing: the branch that says 'data'."""
    run = failed(
        "the report has no data for one city, 100 of them checked",
        ev(0, EventType.USER_INPUT, None, input="weather"),
        *branches("Paris: no data", "Lyon: the forecast has rain for the week", "Nice: 100"),
    )
    assert guesses(run)[0][:3] == ("worker", 2, FIRST_DECISION)


def test_a_loop_inside_a_subgraph_is_no_fan_out() -> None:
    """A sub-agent's turns inside a node (a subgraph, a graph on its own thread)
    start under the node's start too, unmarked: no branch is picked by words."""
    run = failed(
        "a city has no data",
        ev(0, EventType.USER_INPUT, None, input="weather for Paris, Lyon, Nice"),
        *branches("Paris: 20C", "Lyon: no data", "Nice: 20C", fan_out=False),
    )
    assert guesses(run)[0][:3] == ("worker", 2, FIRST_DECISION)


def test_branches_the_failure_names_alike_leave_the_first() -> None:
    run = failed(
        "the report has no data",
        ev(0, EventType.USER_INPUT, None, input="weather for Paris, Lyon"),
        *branches("Paris: no data", "Lyon: no data"),
    )
    assert guesses(run)[0][:3] == ("worker", 2, FIRST_DECISION)


def test_a_loops_turns_are_no_branches() -> None:
    """Turns of one agent the run's input started (a loop), not one step: the first
    that acted, whatever words a later turn said."""
    run = booked(
        turn(3, ("reserve_table", {"table": "T4"})),
        turn(4, said="the guest could not reach it? reserved T4"),
        reason="the guest could not reach the table",
    )
    assert guesses(run)[0][:3] == ("concierge", 3, FIRST_ACT)


def test_of_other_agents_the_one_whose_words_the_failure_names_gave_the_answer() -> None:
    """The answer repeats what three workers said, as many words each: the worker
    whose words the failure's reason names is where it came from."""
    run = failed(
        "a city has no data",
        ev(0, EventType.USER_INPUT, None, input="weather"),
        ev(1, EventType.LLM_RESPONSE, "paris", output="Paris sunny"),
        ev(2, EventType.LLM_RESPONSE, "lyon", output="Lyon data missing"),
        ev(3, EventType.LLM_RESPONSE, "nice", output="Nice sunny"),
        ev(4, EventType.FINAL_ANSWER, "writer", output="Paris sunny; Lyon data missing; Nice"),
    )
    origin = [g for g in guesses(run) if "carries what this step" in g[2]]
    assert origin[0][:2] == ("lyon", 2)
    # the reason's words break ties only: who said most of the answer comes first
    run = failed(
        "the answer has the wrong times",
        ev(0, EventType.USER_INPUT, None, input="flights to Rome"),
        ev(1, EventType.LLM_RESPONSE, "planner", output="Check the flights and times"),
        ev(2, EventType.LLM_RESPONSE, "researcher", output="AZ61 0900 AZ63 1130 FR12 1415"),
        ev(3, EventType.FINAL_ANSWER, "writer", output="AZ61 0900, AZ63 1130, FR12 1415 times"),
    )
    origin = [g for g in guesses(run) if "carries what this step" in g[2]]
    assert origin[0][:2] == ("researcher", 2)


def test_one_common_word_is_no_sign_of_where_the_answer_came_from() -> None:
    """A review: a supervisor sent a flight request to the hotel worker, which did
    its job; the supervisor's wrap-up ("your trip is booked, hotel included") shared
    one word with it, and the worker was blamed as the answer's origin over the
    routing decision. A number the answer repeats still tells."""

    def routed(worker_said: str, answer: str) -> AgentTrajectory:
        return failed(
            "no flight was searched",
            ev(0, EventType.USER_INPUT, None, input="Book me a flight Munich to Berlin"),
            ev(1, EventType.LLM_RESPONSE, "supervisor", output="route to hotels"),
            ev(2, EventType.LLM_RESPONSE, "hotels", output=worker_said),
            ev(3, EventType.FINAL_ANSWER, "supervisor", output=answer),
        )

    run = routed(
        "Hotel Adlon Berlin, 180 EUR per night", "Done: your trip is booked, hotel included."
    )
    assert not [g for g in guesses(run) if "carries what this step" in g[2]]
    assert guesses(run)[0][:2] == ("supervisor", 1)
    run = routed("Hotel Adlon Berlin, 180 EUR per night", "Done: booked for 180 a night.")
    origin = [g for g in guesses(run) if "carries what this step" in g[2]]
    assert origin and origin[0][:2] == ("hotels", 2)
    # (a second review: a worker whose one word is its whole answer still tells)
    run = routed("Sydney", "The answer is Sydney.")
    origin = [g for g in guesses(run) if "carries what this step" in g[2]]
    assert origin and origin[0][:2] == ("hotels", 2)


def test_a_lookup_that_asked_for_the_value_wanted_is_no_suspect() -> None:
    """The search asked for the right date, the one the reason says was wanted: the
    booking after it, which took the wrong flight, is the guess."""
    run = failed(
        "wrong flight booked, expected '2024-05-14'",
        ev(0, EventType.USER_INPUT, None, input="a flight to Rome next Tuesday"),
        turn(1, ("search_flights", {"to": "Rome", "date": "2024-05-14"})),
        result(2, "AZ 61 2024-05-14; AZ 65 2024-05-15"),
        turn(3, ("book_flight", {"flight": "AZ 65"})),
        result(4, "booked AZ 65"),
        turn(5, said="Booked AZ 65."),
    )
    assert guesses(run)[0][:3] == ("concierge", 3, FIRST_ACT)


def fan_out(reason: str, *summaries: str) -> AgentTrajectory:
    """A planner fans out to one worker per document; a reducer answers with every
    worker's summary."""
    workers = [
        ev(2 + i, EventType.LLM_RESPONSE, "worker", output=said) for i, said in enumerate(summaries)
    ]
    return failed(
        reason,
        ev(0, EventType.USER_INPUT, None, input="summarize the docs"),
        ev(1, EventType.LLM_RESPONSE, "planner", output="plan: summarize 3 docs"),
        *workers,
        ev(9, EventType.FINAL_ANSWER, "reducer", output="Report: " + " | ".join(summaries)),
    )


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_of_a_fan_outs_branches_the_one_the_reason_singles_out_is_guessed(bad: int) -> None:
    """Every worker's summary is in the answer, so each said part of it; the
    branch that ran first is no likelier than the others (before, it was always the
    guess). The reason singles one out: the only one not saying what it says all
    the others said ("missing the revenue"), or the only one saying a name it names."""
    good = [f"summary of doc-{i}: revenue 7M" for i in range(3)]
    missing = [*good[:bad], "summary: (nothing relevant)", *good[bad + 1 :]]
    (first, *_) = guesses(fan_out("a document's summary is missing the revenue", *missing))
    assert first[:2] == ("worker", 2 + bad)
    wrong = [*good[:bad], f"summary of doc-{bad}: revenue 9M", *good[bad + 1 :]]
    (first, *_) = guesses(fan_out(f"the revenue of doc-{bad} is wrong", *wrong))
    assert first[:2] == ("worker", 2 + bad)


def test_of_a_fan_outs_branches_a_reason_that_singles_out_none_keeps_the_first() -> None:
    """Two summaries, one missing a figure: with two, the reason's word one says and
    the other lacks could point either way, so the order stands (no pick is made up)."""
    run = fan_out("a summary is missing the revenue", "summary: revenue 7M", "summary: none")
    (first, *_) = guesses(run)
    assert first[:2] == ("worker", 2)


def test_of_a_fan_outs_branches_one_that_did_right_is_not_singled_out() -> None:
    """ "A summary leaks the forecast", said by two summaries of three: the one that
    did not say it did right, so the reason singles out none (the rule that picks
    the one not saying what the others say is for what a reason says is missing)."""
    leaked = [f"summary of doc-{i}: revenue 7M, forecast 9M" for i in range(2)]
    run = fan_out("a summary leaks the forecast", *leaked, "summary of doc-2: revenue 5M")
    (first, *_) = guesses(run)
    assert first[:2] == ("worker", 2)  # (one of the two that leaked, as before)


def test_a_branch_reads_its_document_before_it_sums_it_up() -> None:
    """Each worker calls a tool first: what it asked for is not what it said, so the
    reason still singles out the summary missing the revenue."""
    for bad in range(3):
        summaries = [f"summary of doc-{i}: revenue 7M" for i in range(3)]
        summaries[bad] = "summary: (nothing relevant)"
        events = [
            ev(0, EventType.USER_INPUT, None, input="summarize the docs"),
            ev(1, EventType.LLM_RESPONSE, "planner", output="plan: summarize 3 docs"),
        ]
        for k, said in enumerate(summaries):
            events.append(
                ev(
                    2 + 2 * k,
                    EventType.TOOL_CALL,
                    "worker",
                    module="read_doc",
                    input={"doc": f"doc-{k}"},
                )
            )
            events.append(ev(3 + 2 * k, EventType.LLM_RESPONSE, "worker", output=said))
        answer = ev(20, EventType.FINAL_ANSWER, "reducer", output=" | ".join(summaries))
        (first, *_) = guesses(failed("a summary is missing the revenue", *events, answer))
        assert first[:2] == ("worker", 3 + 2 * bad)


@pytest.mark.parametrize(
    "reason",
    [
        "a summary fails to mention the revenue",
        "one summary never mentions the revenue",
        "the revenue is not included in one summary",
        "a summary lacks revenue",
        "Revenue is missing from one summary",
        "a summary is missing: revenue",
        "revenue: missing in one summary",
        'a summary is missing "revenue"',
        "one summary omits 'revenue'",
        "the revenue wasn't included in one summary",
        "one summary has no revenue",
    ],
)
def test_the_missing_thing_is_read_however_the_reason_says_it(reason: str) -> None:
    summaries = [f"summary of doc-{i}: revenue 7M" for i in range(3)]
    summaries[1] = "summary of doc-1: (nothing relevant)"
    (first, *_) = guesses(fan_out(reason, *summaries))
    assert first[:2] == ("worker", 3)


@pytest.mark.parametrize(
    "reason",
    [
        "nothing is missing from the summaries, but the revenue figure is wrong",
        "the missing invoice was found, but the total is wrong",
    ],
)
def test_a_reason_that_says_nothing_is_missing_singles_none_out(reason: str) -> None:
    summaries = [
        "summary of doc-0: invoice 7M",
        "summary of doc-1: 7M",
        "summary of doc-2: invoice 7M",
    ]
    (first, *_) = guesses(fan_out(reason, *summaries))
    assert first[:2] == ("worker", 2)  # (the order stands)


def test_only_what_the_reason_says_is_missing_singles_a_branch_out() -> None:
    """ "The quarterly report is missing the profit": no branch gave the profit, so
    none is singled out (not the one lacking "quarterly", a word of the subject)."""
    run = fan_out(
        "the quarterly report is missing the profit",
        "quarterly revenue 7M",
        "quarterly revenue 8M",
        "annual revenue 5M",
    )
    (first, *_) = guesses(run)
    assert first[:2] == ("worker", 2)  # (the order stands: none is singled out)


@pytest.mark.parametrize(
    "reason",
    [
        "a summary is missing the revenue, the profit and the margin",
        "one summary never mentions revenue, profit or margin",
        "a summary lacks the revenue and the margin",
    ],
)
def test_every_item_of_a_list_after_missing_counts(reason: str) -> None:
    """The one summary without the margin is singled out when the margin is a later
    item of the list the reason says is missing (before: only its first item, the
    revenue, which every summary gives, counted, and the order stood)."""
    summaries = [f"summary of doc-{i}: revenue 7M, profit 2M, margin 28%" for i in range(3)]
    summaries[1] = "summary of doc-1: revenue 7M, profit 2M"
    (first, *_) = guesses(fan_out(reason, *summaries))
    assert first[:2] == ("worker", 3)


def test_a_clause_after_the_missing_thing_is_no_item_of_it() -> None:
    """ "missing the revenue, and the writer then dropped the margin": the clause
    after the comma names no missing thing, so the branch without the margin is
    not singled out by it (every summary gives the revenue: the order stands)."""
    summaries = [f"summary of doc-{i}: revenue 7M, margin 28%" for i in range(3)]
    summaries[1] = "summary of doc-1: revenue 7M"
    reason = "a summary is missing the revenue, and the writer then dropped the margin"
    (first, *_) = guesses(fan_out(reason, *summaries))
    assert first[:2] == ("worker", 2)
