"""Quotes copied from the prompt ground, and answers already paid for survive a
stop: a tool call quoted as the prompt or ``show`` writes it is found in the
trace, and DeepDebug, binary search and step-by-step stopped by ``--budget`` give
what they had found, marked partial. Through the real openai client, over HTTP,
to a scripted local server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.llm import Budget
from agentdebug.llm.testing import ScriptedServer
from agentdebug.report import render
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)
from test_model_prompts import schema_name, settings_for, user_text

# -- a LangGraph tool loop: the model asks for "Pariss", the tool fails, it makes up a forecast


CALL = {"id": "c1", "name": "get_weather", "args": {"city": "Pariss", "units": "C"}}
ERROR = "unknown city 'Pariss'; known: ['Berlin', 'Paris']"
MADE_UP = "It is sunny and 25C in Paris today, enjoy!"


def weather(*, traceback: bool = False) -> AgentTrajectory:
    """As the LangGraph callback records a ToolNode loop: node starts with no input,
    the model's reply asking for the tool, the tool call, its error, a made-up answer."""
    question = {"role": "user", "content": "What's the weather in Paris right now?"}
    asked = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    failed = {"role": "tool", "name": "get_weather", "tool_call_id": "c1", "content": ERROR}

    def event(id_: str, type_: EventType, step: int, agent: str | None, **kw: Any) -> AgentEvent:
        return AgentEvent(id=id_, type=type_, step_index=step, agent_name=agent, **kw)

    trace = (
        'Traceback (most recent call last):\n  File "app.py", line 26, in get_weather\n'
        f"ValueError: {ERROR}"
    )
    return AgentTrajectory(
        id="weather",
        framework="langgraph",
        goal="What's the weather in Paris right now?",
        events=[
            event("e0", EventType.USER_INPUT, 0, None, input={"messages": [question]}),
            event("s1", EventType.AGENT_START, 1, "agent"),
            event("e2", EventType.LLM_RESPONSE, 1, "agent", input=[question], output=asked),
            event("e3", EventType.AGENT_END, 1, "agent", output={"messages": [asked]}),
            event(
                "e5",
                EventType.TOOL_CALL,
                1,
                "agent",
                input={"city": "Pariss", "units": "C"},
                metadata={"tool_name": "get_weather"},
            ),
            event("s2", EventType.AGENT_START, 2, "tools"),
            event(
                "e6",
                EventType.TOOL_RESULT,
                2,
                "tools",
                parent_id="e5",  # (the call it answers, filed under the model's step)
                metadata={"tool_name": "get_weather"},
                error=ErrorInfo(
                    type="ValueError", message=ERROR, traceback=trace if traceback else None
                ),
            ),
            event("e7", EventType.AGENT_END, 2, "tools", output={"messages": [failed]}),
            event("s3", EventType.AGENT_START, 3, "agent"),
            event(
                "e9",
                EventType.LLM_RESPONSE,
                3,
                "agent",
                input=[question, asked, failed],
                output={"role": "assistant", "content": MADE_UP},
            ),
            event("e11", EventType.FINAL_ANSWER, 3, "agent", output=MADE_UP),
        ],
        outcome=Outcome(
            status=OutcomeStatus.FAILURE,
            reason=f"the answer does not give the tool's temperature: {MADE_UP!r}",
        ),
    )


def weather_twice() -> AgentTrajectory:
    """:func:`weather` with the misspelt call made twice: three decisions (steps 1,
    3, 5) around two tool-node steps (2, 4), which decide nothing."""
    run = weather()
    events: list[AgentEvent] = []
    for e in run.events:
        if e.step_index < 3:
            events.append(e)
            if e.id == "e7":  # the same call and failure again, at steps 3 and 4
                events += [
                    x.model_copy(
                        update={
                            "id": f"{x.id}b",
                            "step_index": x.step_index + 2,
                            "parent_id": f"{x.parent_id}b" if x.parent_id else None,
                        }
                    )
                    for x in run.events
                    if x.step_index in (1, 2)
                ]
        else:
            events.append(e.model_copy(update={"step_index": e.step_index + 2}))
    return run.model_copy(update={"events": events})


def attribution(step: int, quote: str, confidence: float, quote_step: int | None = None) -> str:
    return json.dumps(
        {
            "agent": "agent",
            "step": step,
            "failure_mode": None,
            "reason": "it asked for a misspelt city and then made up the forecast",
            "evidence": [{"step": step if quote_step is None else quote_step, "text": quote}],
            "fix": 'Call get_weather with {"city": "Paris"}.',
            "confidence": confidence,
        }
    )


# -- 1. a tool call quoted as the prompt or `show` writes it is in the trace -----------------


@pytest.mark.parametrize(
    "quote",
    [
        '→ call get_weather({"city":"Pariss","units":"C"})',  # the full view, verbatim
        'get_weather({"city":"Pariss","units":"C"})',  # `agentdebug show`
        'calls get_weather({"city":"Pariss","units":"C"})',  # the medium view
        'get_weather({"city": "Pariss", "units": "C"})',  # a model's own spacing
        '[assistant] → call get_weather( {"city": "Pariss", "units": "C"} )',
    ],
)
def test_a_tool_call_quoted_as_the_prompt_shows_it_is_grounded(quote: str) -> None:
    """Before, only the bare arguments grounded: the quote was "not found in the
    trace" and the answer lost a quarter of its confidence (0.85 -> 0.64)."""
    with ScriptedServer(lambda r: attribution(1, quote, 0.85)) as server:
        report = diagnose(weather(), attributor="all-at-once", settings=settings_for(server))
    assert '→ call get_weather({"city":"Pariss","units":"C"})' in user_text(server.requests[0])
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 1)
    assert root.confidence == 0.85
    (evidence,) = root.evidence
    assert evidence.grounded is True and evidence.step_index == 1
    assert evidence.event_id == "e5"  # the tool call itself
    shown = render(report, weather())
    assert "not found in the trace" not in shown and "NOT FOUND" not in shown


@pytest.mark.parametrize(
    ("quote", "step"),
    [
        (f"[tool get_weather] {ERROR}", 3),  # a message of a model call's input
        (f"ERROR: ValueError: {ERROR}", 2),  # the full view's error, with no traceback
        (f"✗ {ERROR}", 2),  # `agentdebug show`
        (  # a node's update, as the full view writes an object
            'messages: [{"content":"' + ERROR + '","name":"get_weather",'
            '"role":"tool","tool_call_id":"c1"}]',
            2,
        ),
    ],
)
def test_other_lines_copied_from_the_prompt_are_grounded(quote: str, step: int) -> None:
    with ScriptedServer(lambda r: attribution(1, quote, 0.85, quote_step=step)) as server:
        report = diagnose(weather(), attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.confidence == 0.85
    assert root.evidence[0].grounded is True and root.evidence[0].step_index == step


@pytest.mark.parametrize(
    "invented",
    [
        'get_weather({"city":"London","units":"C"})',  # arguments it was not called with
        'get_forecast({"city":"Pariss","units":"C"})',  # a tool it did not call
        '→ call get_weather({"city":"Paris","units":"C"})',
        'calls get_weather({"city":"Pariss","units":"F"})',
    ],
)
def test_the_way_a_call_is_written_is_forgiven_not_the_call(invented: str) -> None:
    """Of two quotes written alike, the call the agent made is found and one it did
    not make is not: the answer pays for that one alone (0.85 x 0.75)."""
    made = 'get_weather({"city": "Pariss", "units": "C"})'
    quotes = [{"step": 1, "text": made}, {"step": 1, "text": invented}]
    answer = {**json.loads(attribution(1, made, 0.85)), "evidence": quotes}
    with ScriptedServer(lambda r: json.dumps(answer)) as server:
        report = diagnose(weather(), attributor="all-at-once", settings=settings_for(server))
    root = report.root_cause
    assert root is not None
    assert [e.grounded for e in root.evidence] == [True, False]
    assert root.confidence == pytest.approx(0.85 * 0.75)
    assert "not found in the trace" in (root.evidence[1].note or "")


@pytest.mark.parametrize(
    "near",
    [
        "units: CX",  # (a value the call's is the start of, or that starts it)
        "city: Paris",
        'get_weather({"city":"Pari',  # (a call cut short in a value: not partly found)
        'get_weather({"city":"Paris","units":"C"})',
        'get_weather({"city":"Pariss","units":"Celsius","extra":"yes"})',
    ],
)
def test_a_value_or_a_call_is_found_whole_or_not_at_all(near: str) -> None:
    """A review: "amount: 100" was found in a call of amount 1000, "city: Paris" in
    one for "Pariss", and a call never made "75 % found": each grounded, each kept
    a confident answer over the router's bar."""
    from agentdebug.evidence import Grounder, MatchKind

    grounder = Grounder(weather())
    assert grounder.find(near).kind is MatchKind.NONE, near
    assert grounder.find("city: Pariss").kind is not MatchKind.NONE  # (whole: found)


def test_the_router_weighs_an_answer_quoting_a_tool_call_at_its_own_confidence() -> None:
    """0.8 on the call as the prompt shows it: grounded, the router takes it at 0.8
    (before, it was cut to 0.6 as resting on a quote "not in the trace": below the
    router's 0.7 bar, it would have escalated had the free tier not agreed)."""
    quote = '→ call get_weather({"city":"Pariss","units":"C"})'
    with ScriptedServer(lambda r: attribution(1, quote, 0.8)) as server:
        report = diagnose(weather(), attributor="auto", settings=settings_for(server))
    assert [schema_name(r) for r in server.requests] == ["Attribution"]
    root = report.root_cause
    assert root is not None and root.step_index == 1 and root.confidence > 0.8
    assert "all-at-once: agent at step 1 (0.80)" in root.metadata["route"]
    assert root.evidence and all(e.grounded for e in root.evidence)


# -- 2. a budget stop keeps the answers already paid for -----------------------------------


def global_read(step: int, confidence: float = 0.8, failure: int = 3) -> str:
    return json.dumps(
        {
            "goal": "the weather in Paris",
            "history": "the agent asked the tool for Pariss, it failed, the agent made it up",
            "failure_step": failure,
            "agent": "agent",
            "step": step,
            "failure_mode": "action.malformed_tool_call",
            "reason": "it asked the weather tool for a misspelt city",
            "evidence": [
                {"step": step, "text": '→ call get_weather({"city":"Pariss","units":"C"})'}
            ],
            "fix": 'Call get_weather with {"city": "Paris", "units": "C"}.',
            "confidence": confidence,
        }
    )


def notes_of(report: Any) -> str:
    return "\n".join(report.notes)


def test_deepdebug_stopped_after_its_global_read_gives_that_answer() -> None:
    """--budget 1calls: the global read named agent, step, mode and fix, and was
    paid for. Before, it was thrown away for the heuristic's 0.20 default guess."""
    with ScriptedServer(lambda r: global_read(1)) as server:
        report = diagnose(
            weather(),
            attributor="deepdebug",
            settings=settings_for(server),
            budget=Budget(max_calls=1),
        )
    assert [schema_name(r) for r in server.requests] == ["GlobalRead"]
    root = report.root_cause
    assert root is not None and root.strategy == "deepdebug"
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        1,
        "action.malformed_tool_call",
    )
    assert root.confidence == 0.8  # the read's own: no probe agreed with it
    assert root.evidence and all(e.grounded for e in root.evidence)
    assert report.fix is not None and '"city": "Paris"' in report.fix.directive
    assert root.metadata["partial"] == "budget"
    notes = notes_of(report)
    assert "deepdebug stopped after its global read: the budget ran out" in notes
    assert "model-call budget spent (1 of 1 calls)" in notes
    assert "the probe and the cross-examination were not made" in notes
    assert "heuristic" not in notes
    assert report.cost.calls == 1
    shown = render(report, weather())
    assert "the global read's answer alone: the budget ran out before the probe" in shown


def test_deepdebug_stopped_by_a_token_budget_gives_its_global_read() -> None:
    with ScriptedServer(lambda r: global_read(1)) as server:
        first = diagnose(weather(), attributor="deepdebug", settings=settings_for(server))
    spent = first.audit[next(i for i, a in enumerate(first.audit) if a.stage == "llm")]
    enough_for_one = spent.input_tokens + spent.output_tokens + 200
    with ScriptedServer(lambda r: global_read(1)) as server:
        report = diagnose(
            weather(),
            attributor="deepdebug",
            settings=settings_for(server),
            budget=Budget(max_tokens=enough_for_one),
        )
    assert len(server.requests) == 1
    root = report.root_cause
    assert root is not None and root.strategy == "deepdebug" and root.step_index == 1
    assert "token budget would be exceeded" in notes_of(report)


def test_deepdebug_stopped_before_its_cross_examination_names_the_likelier_candidate() -> None:
    """The global read and the probe disagree, and no call is left to decide: the
    more confident is named, at 0.5 at most, the other listed below it."""

    def script(request: dict[str, Any]) -> str:
        if schema_name(request) == "GlobalRead":
            return global_read(3, confidence=0.6)
        return attribution(1, '→ call get_weather({"city":"Pariss","units":"C"})', 0.9)

    with ScriptedServer(script) as server:
        report = diagnose(
            weather(),
            attributor="deepdebug",
            settings=settings_for(server),
            budget=Budget(max_calls=2),
        )
    assert [schema_name(r) for r in server.requests] == ["GlobalRead", "Attribution"]
    root, other = report.hypotheses[:2]
    assert (root.step_index, root.confidence) == (1, 0.5)
    assert other.step_index == 3 and other.confidence <= 0.3
    assert report.fix is not None and '"city": "Paris"' in report.fix.directive  # the probe's
    assert root.metadata["partial"] == "budget" and root.metadata["candidates"] == [3, 1]
    notes = notes_of(report)
    assert "deepdebug stopped before its cross-examination: the budget ran out" in notes
    assert "the global read named step 3, the probe step 1" in notes


def half(which: str, quote_step: int, confidence: float, **extra: Any) -> str:
    return json.dumps(
        {
            "half": which,
            "reason": "The agent asked for a city that does not exist.",
            "evidence": '→ call get_weather({"city":"Pariss","units":"C"})',
            "evidence_step": quote_step,
            "confidence": confidence,
            **extra,
        }
    )


def test_binary_search_stopped_names_the_step_its_evidence_points_at() -> None:
    """Decisions 1, 3 and 5 halved once to 1 and 3 (the tool node's steps between
    them decide nothing), then the budget ran out: step 1, where its quote is from,
    at the search's 0.9 shared over the two steps left."""
    with ScriptedServer(lambda r: half("first", 1, 0.9)) as server:
        report = diagnose(
            weather_twice(),
            attributor="binary-search",
            settings=settings_for(server),
            budget=Budget(max_calls=1),
        )
    assert len(server.requests) == 1
    root = report.root_cause
    assert root is not None and root.strategy == "binary-search"
    assert (root.agent_name, root.step_index, root.confidence) == ("agent", 1, 0.45)
    assert root.metadata["partial"] == "budget" and root.metadata["range"] == [1, 3]
    assert root.evidence and all(e.grounded for e in root.evidence)
    notes = notes_of(report)
    assert "binary-search stopped with steps 1–3 left to halve: the budget ran out" in notes
    assert "step 1 is named (the step its evidence was quoted from)" in notes


def test_binary_search_joins_its_verdicts_without_a_stray_full_stop() -> None:
    def script(request: dict[str, Any]) -> str:
        if schema_name(request) == "FinalHalfVerdict":
            return half("first", 1, 0.9, fix="", failure_mode=None)
        return half("first", 1, 0.9)

    with ScriptedServer(script) as server:
        report = diagnose(
            weather_twice(), attributor="binary-search", settings=settings_for(server)
        )
    root = report.root_cause
    assert root is not None and root.step_index == 1
    assert ".;" not in root.rationale
    assert root.rationale.count("The agent asked for a city that does not exist") == 2


def verdict(step: int, probability: float) -> str:
    return json.dumps(
        {
            "decisive": False,
            "error_probability": probability,
            "failure_mode": None,
            "reason": f"step {step} looks {'odd' if probability >= 0.3 else 'fine'}",
            "evidence": "",
            "fix": "",
        }
    )


def test_step_by_step_stopped_names_the_most_suspicious_step_read() -> None:
    """One step read, judged 40 % likely the error but not decisive, then the
    budget ran out: that step, at 0.3 (as when no step is decisive), marked
    partial. A step read and judged fine is no answer: the free tier's is used."""
    with ScriptedServer(lambda r: verdict(1, 0.4)) as server:
        report = diagnose(
            weather(),
            attributor="step-by-step",
            settings=settings_for(server),
            budget=Budget(max_calls=1),
        )
    root = report.root_cause
    assert root is not None and root.strategy == "step-by-step"
    assert (root.step_index, root.confidence) == (1, 0.3)
    assert root.metadata["partial"] == "budget"
    assert "the budget ran out after 1 of 2 steps were read" in root.rationale
    assert "step-by-step stopped after reading 1 of 2 steps: the budget ran out" in (
        notes_of(report)
    )

    with ScriptedServer(lambda r: verdict(1, 0.05)) as server:
        report = diagnose(
            weather(),
            attributor="step-by-step",
            settings=settings_for(server),
            budget=Budget(max_calls=1),
        )
    assert report.root_cause is not None and report.root_cause.strategy == "heuristic"
    assert "attributor 'step-by-step' failed: model-call budget spent" in notes_of(report)


# -- 3. a medium view of a LangGraph node says no "intent: null" ------------------------------


def test_deepdebug_probe_shows_no_null_intent_for_nodes_started_without_input() -> None:
    """LangGraph records a node's start with no input; its medium view printed
    "intent: null" on every step of the probe's prompt."""
    from conftest import node

    notes = " Working notes: the filings list several quarters, read one by one." * 12
    agents = ["supervisor", "researcher", "supervisor", "writer", "supervisor"]
    events = [
        e
        for i, agent in enumerate(agents, 1)
        for e in node(
            i, agent, {"messages": [{"role": "assistant", "content": f"{agent} {i}.{notes}"}]}
        )
    ]
    run = AgentTrajectory(
        id="supervisor",
        framework="langgraph",
        goal="Write a one-line market note on ACME's Q3 revenue.",
        events=events,
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="the note gives the wrong revenue"),
    )

    def script(request: dict[str, Any]) -> str:
        if schema_name(request) == "GlobalRead":
            read = json.loads(global_read(2, failure=1))  # (the chain: step 1 alone)
            return json.dumps({**read, "agent": "researcher", "evidence": []})
        return attribution(2, "", 0.7).replace('"agent": "agent"', '"agent": "researcher"')

    with ScriptedServer(script) as server:
        diagnose(run, attributor="deepdebug", settings=settings_for(server))
    probe = user_text(server.requests[1])
    assert re.search(r"^  intent: ", probe, re.MULTILINE)  # (the medium view is shown)
    assert "intent: null" not in probe


@pytest.mark.parametrize(
    ("payload", "quote", "found"),
    [
        ({"amount": 1.5}, "amount: 1", False),  # (a number cut at its point or comma)
        ({"amount": "1,000"}, "amount: 1", False),
        ({"amount": 100.75}, 'pay({"amount":100', False),
        ({"city": "Paris-Nord"}, "city: Paris", False),  # (a word cut at a hyphen)
        ({"amount": 1000, "to": "bob"}, "amount: 100 ... to: bob", False),  # (fragments)
        ({"xk": "v1", "k": "v1"}, "k: v1", True),  # (a later occurrence, whole)
        ({"amount": 1000, "to": "bob"}, 'pay({"amount": 1000, "to": "bob"})', True),
    ],
)
def test_what_a_view_writes_is_found_whole_in_every_way(
    payload: dict[str, Any], quote: str, found: bool
) -> None:
    """A third review: numbers cut at "." or ",", words at "-", and quotes with an
    ellipsis still matched a value the view wrote longer."""
    from agentdebug.evidence import Grounder

    event = AgentEvent(
        id="e1", type=EventType.TOOL_CALL, step_index=1, input=payload,
        metadata={"tool_name": "pay"},
    )  # fmt: skip
    run = AgentTrajectory(id="t", framework="custom", goal="g", events=[event])
    assert Grounder(run).find(quote).grounded is found


@pytest.mark.parametrize(
    "quote",
    [
        "Refund (partial) was approved for customer 4411 after the agent checked it",
        'get_weather(city="Pariss", units="C", days=3, lang="en")',
    ],
)
def test_prose_or_a_call_with_keywords_may_still_be_partly_found(quote: str) -> None:
    """Only a quote written as the views write a call (``name({``) is found whole or
    not at all; prose that opens "Word (" and a keyword call are read in 3-grams."""
    from agentdebug.evidence import Grounder, MatchKind

    said = "Refund was approved for customer 4411 after the agent checked it carefully"
    event = AgentEvent(
        id="e1", type=EventType.MESSAGE, step_index=1, agent_name="a",
        output=f'{said}; get_weather city="Pariss", units="C", days=3, lang="en"',
    )  # fmt: skip
    run = AgentTrajectory(id="t", framework="custom", goal="g", events=[event])
    assert Grounder(run).find(quote).kind is MatchKind.PARTIAL


def test_a_search_or_reading_that_suspects_no_step_names_none() -> None:
    """Every step judged 0 % likely the error (step-by-step), or every half chosen at
    confidence 0 (binary search): no step is named at confidence 0.00 ("the step
    judged most likely to be the error", when all tied at nothing, and a closed loop
    reran from it); the free tier answers, saying why."""
    for attributor, reply in [
        ("step-by-step", lambda r: verdict(1, 0.0)),
        ("binary-search", lambda r: half("first", 1, 0.0)),
    ]:
        with ScriptedServer(reply) as server:
            report = diagnose(weather_twice(), attributor=attributor, settings=settings_for(server))
        root = report.root_cause
        assert root is not None and root.strategy == "heuristic", attributor
        assert root.confidence > 0
        assert any(f"{attributor} named no step" in n for n in report.notes), report.notes
    # one half chosen unsure, the others sure: a step is named (at the least of them)
    replies = iter([half("first", 1, 0.03), half("first", 1, 0.9)] * 3)
    with ScriptedServer(lambda r: next(replies)) as server:
        report = diagnose(
            weather_twice(), attributor="binary-search", settings=settings_for(server)
        )
    root = report.root_cause
    assert root is not None and root.strategy == "binary-search" and root.step_index == 1
