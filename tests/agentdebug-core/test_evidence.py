"""Grounding: a quote is checked against the event it cites, and missing quotes cost."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.evidence import (
    Grounder,
    Match,
    MatchKind,
    extract_quotes,
    ground_findings,
    ground_hypotheses,
)
from agentdebug.io import TrailImporter, WhoWhenImporter, import_file
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Evidence,
    Finding,
    Hypothesis,
)
from agentdebug.text import compact_json, flatten

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
WHOWHEN = DATA / "whowhen"
TRAIL = DATA / "trail" / "gaia" / "traces"
EXAMPLE = REPO / "examples" / "failed_booking.json"

needs_whowhen = pytest.mark.skipif(
    not WHOWHEN.is_dir(), reason=f"Who&When data not found at {WHOWHEN} (../shared/data)"
)
needs_trail = pytest.mark.skipif(
    not TRAIL.is_dir(), reason=f"TRAIL data not found at {TRAIL} (../shared/data)"
)


def ev(i: int, type_: EventType = EventType.MESSAGE, **kw: Any) -> AgentEvent:
    return AgentEvent(id=f"e{i}", type=type_, step_index=i, agent_name="agent", **kw)


def traj(*events: AgentEvent, **kw: Any) -> AgentTrajectory:
    return AgentTrajectory(id="t", events=list(events), **kw)


def find(t: AgentTrajectory, quote: str, **kw: Any) -> Match:
    return Grounder(t).find(quote, **kw)


# -- the matching rules, on small traces ------------------------------------------------


def test_a_verbatim_quote_is_exact_at_the_cited_event_and_names_the_field() -> None:
    t = traj(ev(0, output="The fare search returned 3 results."), ev(1, output="Booking now."))
    m = find(t, "returned 3 results", step_index=0)
    assert (m.kind, m.event_id, m.step_index, m.elsewhere) == (MatchKind.EXACT, "e0", 0, False)
    assert (m.coverage, m.source, m.field, m.grounded) == (1.0, "event", "output", True)


def test_a_literal_backslash_n_in_the_quote_matches_a_real_newline() -> None:
    t = traj(ev(0, EventType.TOOL_RESULT, output="line a\nline b\tdone"))
    m = find(t, "line a\\nline b\\tdone", step_index=0)
    assert (m.kind, m.event_id) == (MatchKind.NORMALIZED, "e0")


def test_escaped_json_in_the_trace_matches_a_quote_with_real_newlines() -> None:
    # JSON inside a string, as TRAIL span attributes carry it: the trace holds the
    # two characters backslash-n and an escaped quote; the model quotes it as read.
    payload = '{"content": "Thought: look it up.\\nCode:\\nprint(\\"hi\\")\\u00e9"}'
    t = traj(ev(0, EventType.LLM_RESPONSE, output=payload))
    assert (
        find(t, 'Thought: look it up.\nCode:\nprint("hi")é', event_id="e0").kind
        is MatchKind.NORMALIZED
    )
    # and a dict payload is searchable as compact JSON too, escapes included
    t2 = traj(ev(0, EventType.TOOL_CALL, input={"code": "x = 1\nprint(x)"}))
    assert find(t2, '{"code":"x = 1\\nprint(x)"}', step_index=0).kind is MatchKind.EXACT
    assert find(t2, "x = 1\nprint(x)", step_index=0).kind is MatchKind.EXACT


def test_curly_quotes_case_whitespace_and_markdown_are_normalised() -> None:
    t = traj(ev(0, output="The agent said “it’s **DONE**”\n\n   and   stopped — for good."))
    for quote in (
        'the agent said "it\'s done" and stopped - for good',
        "THE AGENT SAID “IT’S DONE”",
        '"said "it\'s **done**" and stopped."',  # surrounding quotes and punctuation
    ):
        m = find(t, quote, step_index=0)
        assert (m.kind, m.event_id) == (MatchKind.NORMALIZED, "e0"), quote


def test_ellipses_split_a_quote_into_fragments_found_in_order() -> None:
    text = "Step one: search the fares. Step two: pick the cheapest nonstop. Step three: book it."
    t = traj(ev(0, output=text))
    for quote in (
        "Step one: search the fares ... book it.",
        "search the fares … pick the cheapest […] Step three",
        "search the fares (...) x (...) book it",  # 'x' is under 2 words: ignored
    ):
        m = find(t, quote, step_index=0)
        assert (m.kind, m.event_id) == (MatchKind.FRAGMENTS, "e0"), quote
    assert find(t, "Step one: search the fares ... x (...) book it").coverage < 1.0
    # fragments out of order are not a match
    assert find(t, "book it ... search the fares").kind is MatchKind.NONE


PLAN = (
    "First I will query the fare search tool for nonstop flights from Boston to Denver "
    "on the fourteenth of December and then compare every returned price carefully"
)


def test_a_paraphrase_is_none_and_a_mostly_verbatim_quote_is_partial() -> None:
    t = traj(ev(0, output="hello"), ev(1, output=PLAN))
    # 14 words, 12 3-grams; only "for nonstop flights", "nonstop flights from",
    # "flights from boston", "from boston to" and "boston to denver" are there: 42 %
    paraphrase = "I am going to look for nonstop flights from Boston to Denver in December"
    m = find(t, paraphrase, step_index=1)
    assert m.kind is MatchKind.NONE and not m.grounded
    assert m.coverage == pytest.approx(5 / 12, abs=1e-4)
    # one word changed in a 27-word quote: 22 of its 25 3-grams are there
    near = PLAN.replace("compare", "check")
    m = find(t, near, step_index=1)
    assert (m.kind, m.event_id, m.elsewhere) == (MatchKind.PARTIAL, "e1", False)
    assert m.coverage == pytest.approx(22 / 25, abs=1e-4)
    assert m.grounded


def test_partial_takes_the_event_with_the_highest_share() -> None:
    half = " ".join(PLAN.split()[:14]) + " and nothing else at all here"
    t = traj(ev(0, output=half), ev(1, output="x"), ev(2, output=PLAN))
    m = find(t, PLAN.replace("carefully", "twice"))
    assert (m.kind, m.event_id) == (MatchKind.PARTIAL, "e2")


def test_found_elsewhere_is_flagged_and_the_earliest_occurrence_wins() -> None:
    t = traj(
        ev(0, output="nothing here"),
        ev(1, output="the price is 420 USD"),
        ev(2, output="I repeat: the price is 420 USD"),
        ev(3, output="done"),
    )
    m = find(t, "the price is 420 USD", step_index=3)
    assert (m.kind, m.step_index, m.elsewhere) == (MatchKind.EXACT, 1, True)
    # the cited step wins over an earlier occurrence
    assert find(t, "the price is 420 USD", step_index=2).step_index == 2
    # with no citation, nothing is 'elsewhere'
    assert find(t, "the price is 420 USD").elsewhere is False
    # a cited event that does not exist: found, but not where cited
    assert find(t, "the price is 420 USD", event_id="nope").elsewhere is True


def test_goal_and_reference_answer_are_searchable_but_are_not_events() -> None:
    t = traj(
        ev(0, output="searching"),
        goal="Book the cheapest nonstop flight for one adult.",
        reference_answer="Confirmation ABC123",
    )
    m = find(t, "cheapest nonstop flight", step_index=0)
    assert (m.kind, m.source, m.event_id, m.step_index) == (MatchKind.EXACT, "goal", None, None)
    assert m.elsewhere
    r = find(t, "confirmation abc123")
    assert (r.kind, r.source, r.elsewhere) == (MatchKind.NORMALIZED, "reference", False)


def test_error_metadata_and_compact_json_are_part_of_the_event() -> None:
    t = traj(
        ev(0, EventType.TOOL_CALL, input={"date": "14/12/2026", "nonstop": True}),
        ev(
            1,
            EventType.TOOL_RESULT,
            error=ErrorInfo(message="date must be YYYY-MM-DD", type="ValidationError"),
        ),
        ev(2, EventType.HANDOFF, output="over to you", metadata={"target": "billing_agent"}),
    )
    assert find(t, '"date":"14/12/2026"', step_index=0).field == "input"
    assert find(t, "ValidationError", step_index=1).field == "error"
    assert find(t, "date must be YYYY-MM-DD", step_index=1).field == "error"
    assert find(t, "billing_agent", step_index=2).field == "metadata"


def test_message_lists_ground_as_text_as_json_and_by_their_left_out_strings() -> None:
    messages = [
        {"role": "system", "name": "Planner_Agent", "content": "Plan the trip.\nBe brief."},
        {"role": "user", "content": [{"type": "text", "text": "Find fares to Denver"}]},
    ]
    t = traj(ev(0, EventType.LLM_CALL, input=messages, output="ok"))
    assert find(t, "Plan the trip.\nBe brief.", step_index=0).kind is MatchKind.EXACT
    assert find(t, '"name":"Planner_Agent"', step_index=0).kind is MatchKind.EXACT  # JSON
    assert find(t, "Plan the trip.\\nBe brief.", step_index=0).kind is MatchKind.EXACT
    # flatten keeps only the content; the name beside it is still normalised
    m = find(t, "PLANNER_AGENT", step_index=0)
    assert (m.kind, m.field) == (MatchKind.NORMALIZED, "input")
    assert find(t, "find FARES to denver", step_index=0).kind is MatchKind.NORMALIZED


def test_very_short_quotes_are_not_searched_beyond_the_cited_event() -> None:
    t = traj(ev(0, output="ok"), ev(1, output="a - b"))
    m = find(t, "-", step_index=0)
    assert (m.kind, m.checked) == (MatchKind.NONE, False)
    assert find(t, "-", event_id="e1").kind is MatchKind.EXACT  # verbatim where cited
    g = Grounder(t).ground(Evidence(step_index=0, quote="?!"))
    assert (g.grounded, g.match, g.note) == (False, "none", "too short to check")


# -- ground(): the evidence as the report shows it ---------------------------------------


def test_ground_fills_corrects_and_explains() -> None:
    t = traj(*(ev(i, output=f"turn {i}") for i in range(7)), ev(7, output="the total is 42"))
    g = Grounder(t)
    moved = g.ground(Evidence(step_index=9, field="input", quote="the total is 42"))
    assert (moved.grounded, moved.match, moved.step_index, moved.event_id) == (
        True,
        "exact",
        7,
        "e7",
    )
    assert moved.field == "output"
    assert moved.note == "found at step 7, not at the cited step 9"
    filled = g.ground(Evidence(quote="the total is 42"))
    assert (filled.step_index, filled.event_id, filled.note) == (7, "e7", "found at step 7")
    missing = g.ground(Evidence(step_index=3, quote="the total is 99 dollars", note="key line"))
    assert (missing.grounded, missing.match, missing.step_index) == (False, "none", 3)
    assert missing.note == "key line; not found in the trace"
    same = g.ground(Evidence(event_id="e7", step_index=7, quote="the total is 42"))
    assert (same.grounded, same.match, same.note) == (True, "exact", None)
    # no quote: unchanged
    bare = Evidence(event_id="e1", note="see the tool call")
    assert g.ground(bare) is bare


def test_partial_note_and_after_blamed_step() -> None:
    t = traj(ev(0, output="start"), ev(1, output=PLAN))
    g = Grounder(t)
    e = g.ground(Evidence(step_index=1, quote=PLAN.replace("compare", "check")), blamed_step=0)
    assert e.match == "partial" and e.grounded
    assert e.note == "partial: 88% of the quote found"
    assert e.after_blamed_step is True
    before = g.ground(Evidence(step_index=1, quote="nonstop flights from Boston"), blamed_step=1)
    assert before.after_blamed_step is False


# -- claims: confidence and the record ---------------------------------------------------


def test_an_invented_quote_costs_confidence_and_is_recorded() -> None:
    t = traj(ev(0, output="search fares"), ev(1, output=PLAN))
    hyp = Hypothesis(
        agent_name="agent",
        step_index=1,
        strategy="all_at_once",
        confidence=0.8,
        evidence=[
            Evidence(step_index=1, quote="nonstop flights from Boston to Denver"),
            Evidence(step_index=1, quote="the agent booked a first-class seat to Miami"),
            Evidence(step_index=1, quote=PLAN.replace("compare", "check")),
            Evidence(step_index=1, note="no quote here"),
        ],
    )
    (out,) = ground_hypotheses([hyp], t)
    assert [e.match for e in out.evidence] == ["exact", "none", "partial", None]
    assert out.confidence == pytest.approx(0.8 * 0.75 * 0.9)
    assert out.metadata["grounding"] == {
        "quotes": 3,
        "grounded": 2,
        "partial": 1,
        "missing": 1,
        "elsewhere": 0,
        "too_short": 0,
        "confidence_before": 0.8,
    }
    # grounding twice does not charge twice
    assert ground_hypotheses([out], t) == [out]


def test_confidence_never_drops_below_a_quarter_and_order_is_kept() -> None:
    t = traj(ev(0, output="hello world"))
    invented = [Evidence(step_index=0, quote=f"an invented sentence number {i}") for i in range(9)]
    low = Hypothesis(agent_name="a", step_index=0, strategy="s", confidence=0.6, evidence=invented)
    fine = Hypothesis(
        agent_name="a",
        step_index=0,
        strategy="s",
        confidence=0.4,
        evidence=[Evidence(step_index=0, quote="hello world")],
    )
    bare = Hypothesis(agent_name="a", step_index=0, strategy="s", confidence=0.3)
    out = ground_hypotheses([low, fine, bare], Grounder(t))
    assert [h.confidence for h in out] == [pytest.approx(0.15), 0.4, 0.3]
    assert out[0].metadata["grounding"]["missing"] == 9
    assert out[2] is bare and "grounding" not in out[2].metadata


# -- quotes in free text -----------------------------------------------------------------


def test_extract_quotes_finds_quoted_spans_and_skips_apostrophes() -> None:
    text = (
        "The agent's plan used 'Street Address' data, it's wrong; the planner wrote "
        '"book the cheapest nonstop" and then `search_fares(date=...)` with '
        "“fourteenth of December” and ‘the agent’s own notes’ but not 'salt'."
    )
    assert extract_quotes(text) == [
        "Street Address",
        "book the cheapest nonstop",
        "search_fares(date=...)",
        "fourteenth of December",
        "the agent’s own notes",
    ]
    assert "salt" in extract_quotes(text, min_chars=3)
    assert extract_quotes("The agents' answers weren't checked, it's the expert's fault.") == []


# -- real Who&When traces ----------------------------------------------------------------

_SENTENCE = re.compile(r"[A-Z][^.!?\n]{40,160}[.!?]")


@cache
def _whowhen(subset: str, name: str) -> tuple[AgentTrajectory, int | None]:
    run = import_file(WHOWHEN / subset / name, importers=[WhoWhenImporter()])[0]
    assert run.label is not None
    return run.trajectory, run.label.step_index


def _unique_sentence(t: AgentTrajectory, step: int) -> str | None:
    """A sentence of step ``step``'s content that occurs nowhere else in the trace."""
    text = flatten(t.events[step].output)
    for found in _SENTENCE.finditer(text):
        sentence = found.group()
        elsewhere = sum(sentence in flatten(e.output) for e in t.events) - 1
        if not elsewhere and sentence not in (t.goal or ""):
            return sentence
    return None


@needs_whowhen
def test_whowhen_a_real_sentence_grounds_at_its_step_and_is_moved_when_miscited() -> None:
    tried = 0
    for path in sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"), key=lambda p: int(p.stem)):
        t, blamed = _whowhen("Algorithm-Generated", path.name)
        if blamed is None or blamed + 1 >= len(t.events):
            continue
        quote, later = _unique_sentence(t, blamed), _unique_sentence(t, blamed + 1)
        if quote is None or later is None:
            continue
        tried += 1
        g = Grounder(t)
        m = g.find(quote, step_index=blamed)
        assert (m.kind, m.step_index, m.event_id, m.elsewhere) == (
            MatchKind.EXACT,
            blamed,
            f"e{blamed}",
            False,
        )
        wrong = blamed + 1  # the sentence occurs at the blamed step only
        moved = g.find(quote, step_index=wrong)
        assert (moved.kind, moved.step_index, moved.elsewhere) == (MatchKind.EXACT, blamed, True)
        e = g.ground(Evidence(step_index=wrong, quote=quote), blamed_step=blamed)
        assert (e.grounded, e.match, e.step_index, e.after_blamed_step) == (
            True,
            "exact",
            blamed,
            False,
        )
        assert e.note == f"found at step {blamed}, not at the cited step {wrong}"
        after = g.ground(Evidence(step_index=blamed + 1, quote=later), blamed_step=blamed)
        assert (after.grounded, after.after_blamed_step) == (True, True)
        # the same sentence, as a model would retype it
        retyped = "  " + later.upper().replace(" ", "\n ") + "  "
        assert g.find(retyped, step_index=blamed + 1).kind is MatchKind.NORMALIZED
        if tried == 5:
            break
    assert tried == 5


# -- real TRAIL traces -------------------------------------------------------------------


@cache
def _trail() -> list[AgentTrajectory]:
    return [
        import_file(p, importers=[TrailImporter()])[0].trajectory
        for p in sorted(TRAIL.glob("*.json"))
    ]


def _quote_from_the_middle(t: AgentTrajectory, event: AgentEvent, text: str) -> None:
    """A 200-character slice of ``text`` grounds exactly where cited, and retyped."""
    middle = len(text) // 2
    quote = text[middle : middle + 200]
    g = Grounder(t)
    m = g.find(quote, event_id=event.id)
    assert (m.kind, m.event_id, m.elsewhere) == (MatchKind.EXACT, event.id, False)
    # uncited, it is found at this event or an earlier one (LLM inputs repeat history)
    uncited = g.find(quote)
    assert uncited.grounded and (uncited.step_index or 0) <= event.step_index
    # retyped by a model: single spaces, lower case, curly quotes
    retyped = " ".join(quote.split()).lower().replace('"', "“")
    assert g.find(retyped, event_id=event.id).kind in (MatchKind.EXACT, MatchKind.NORMALIZED)


@needs_trail
def test_trail_a_quote_from_inside_a_long_llm_input_and_a_tool_output() -> None:
    t, event = max(
        ((t, e) for t in _trail() for e in t.events if e.type is EventType.LLM_CALL),
        key=lambda te: len(flatten(te[1].input)),
    )
    assert len(flatten(event.input)) > 20_000
    _quote_from_the_middle(t, event, flatten(event.input))
    t, event = max(
        ((t, e) for t in _trail() for e in t.events if e.type is EventType.TOOL_CALL),
        key=lambda te: len(flatten(te[1].output)),
    )
    assert len(flatten(event.output)) > 2_000
    _quote_from_the_middle(t, event, flatten(event.output))


@needs_whowhen
def test_whowhen_a_quote_from_the_longest_terminal_output() -> None:
    runs = [
        (t, e)
        for path in sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))
        for t in [_whowhen("Algorithm-Generated", path.name)[0]]
        for e in t.events
        if e.type is EventType.TOOL_RESULT
    ]
    t, event = max(runs, key=lambda te: len(flatten(te[1].output)))
    assert len(flatten(event.output)) > 40_000
    _quote_from_the_middle(t, event, flatten(event.output))


@needs_trail
def test_trail_escaped_text_in_the_trace_matches_a_quote_with_real_newlines() -> None:
    """smolagents' memory repeats earlier tool calls as Python reprs, so the trace holds
    backslash-n where the code had a newline: the code quoted as written must ground."""
    found = 0
    for t in _trail():
        g = Grounder(t)
        for event in t.events:
            haystack = "".join(flatten(p) + compact_json(p) for p in (event.input, event.output))
            text = flatten(event.input) + "\n" + flatten(event.output)
            at = text.find("\\nprint(")
            if at < 40:
                continue
            start = text.rfind(" ", 0, at - 30) + 1  # not inside an escape sequence
            escaped = text[start : at + 30]
            real = escaped.replace("\\n", "\n")
            if "\\'" in escaped or "\\\\" in escaped or real in haystack:
                continue
            m = g.find(real, event_id=event.id)
            assert (m.kind, m.event_id) == (MatchKind.NORMALIZED, event.id), escaped
            # and the escaped form itself, verbatim, is exact
            assert g.find(escaped, event_id=event.id).kind is MatchKind.EXACT
            found += 1
            break
    assert found >= 10


@needs_trail
def test_trail_compact_json_of_a_tool_call_grounds() -> None:
    t, event = next(
        (t, e)
        for t in _trail()
        for e in t.events
        # (smolagents' final_answer calls, the only ones with multi-line arguments,
        # are the run's final answer, arguments and all)
        if e.type in (EventType.TOOL_CALL, EventType.FINAL_ANSWER)
        and isinstance(e.input, dict)
        and "\\n" in compact_json(e.input)
    )
    quote = compact_json(event.input)[:120]
    m = Grounder(t).find(quote, event_id=event.id)
    assert (m.kind, m.event_id, m.field) == (MatchKind.EXACT, event.id, "input")


# -- the rule pack's own quotes must all ground ------------------------------------------


def _rule_quotes(trajectories: list[AgentTrajectory]) -> tuple[int, int, list[str]]:
    quotes = grounded = 0
    failures: list[str] = []
    pack = RulePack()
    for t in trajectories:
        findings: list[Finding] = ground_findings(pack.detect(t), t)
        for f in findings:
            for e in f.evidence:
                if e.quote is None:
                    continue
                quotes += 1
                grounded += bool(e.grounded) and e.match == "exact" and not e.note
                if not e.grounded:
                    failures.append(f"{t.id} {f.rule_id}: {e.quote[:80]!r} {e.note}")
            if "grounding" in f.metadata:
                assert f.confidence == f.metadata["grounding"]["confidence_before"]
    return quotes, grounded, failures


def test_every_rule_quote_of_the_example_run_grounds_exactly_where_cited() -> None:
    t = AgentTrajectory.model_validate_json(EXAMPLE.read_bytes())
    quotes, grounded, failures = _rule_quotes([t])
    assert failures == []
    assert (grounded, quotes) == (13, 13)


@needs_whowhen
def test_every_rule_quote_of_every_whowhen_trace_grounds_exactly_where_cited() -> None:
    paths = sorted(WHOWHEN.glob("*/*.json"))
    assert len(paths) == 155
    trajectories = [import_file(p, importers=[WhoWhenImporter()])[0].trajectory for p in paths]
    quotes, grounded, failures = _rule_quotes(trajectories)
    assert failures == []
    assert (grounded, quotes) == (146, 146)  # (needed_value_lost quotes one trace's value)


def test_a_long_error_is_quoted_to_a_words_end_and_still_found() -> None:
    """A tool error over the quote's 300 characters is quoted up to the end of a
    word (before: cut mid-word, ``...the upstream invent``), and the quote is still
    found in the event it names."""
    message = "PaymentError: " + " ".join(f"inventory{i} reservation failed" for i in range(40))
    run = AgentTrajectory(
        id="long-error",
        events=[
            AgentEvent(id="e0", step_index=0, type=EventType.USER_INPUT, input="Pay order 7"),
            AgentEvent(
                id="e1", step_index=1, type=EventType.TOOL_CALL, agent_name="pay",
                input={"order": 7}, metadata={"tool_name": "charge"},
            ),
            AgentEvent(
                id="e2", step_index=2, type=EventType.TOOL_RESULT, agent_name="pay",
                parent_id="e1", error=ErrorInfo(message=message), metadata={"tool_name": "charge"},
            ),
        ],
    )  # fmt: skip
    quotes = [
        e.quote
        for f in RulePack().detect(run)
        for e in f.evidence
        if e.event_id == "e2" and e.field == "error"
    ]
    assert quotes
    for quote in quotes:
        assert message.startswith(quote) and 200 < len(quote) <= 300
        assert message[len(quote)] == " "  # it ends where a word does
