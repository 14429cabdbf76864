"""The rule pack: each rule fires on its signal, and only where its signal lives."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.schema import AgentEvent, AgentInfo, AgentTrajectory, ErrorInfo, EventType, Finding


def ev(i: int, type_: EventType, agent: str | None = "agent", **kw: Any) -> AgentEvent:
    if isinstance(kw.get("error"), str):
        kw["error"] = ErrorInfo(message=kw["error"])
    return AgentEvent(id=f"e{i}", type=type_, step_index=i, agent_name=agent, **kw)


def run(*events: AgentEvent, agents: list[str] | None = None) -> list[Finding]:
    traj = AgentTrajectory(
        id="t", events=list(events), agents=[AgentInfo(name=a) for a in agents or []]
    )
    return RulePack().detect(traj)


def modes(findings: list[Finding]) -> list[tuple[str, int | None]]:
    return [(f.mode_id, f.step_index) for f in findings]


@pytest.mark.parametrize(
    ("message", "mode"),
    [
        ("HTTP 429: Too Many Requests", "system.rate_limited"),
        ("Request timed out after 30s", "system.timeout"),
        ("401 Unauthorized: invalid api key", "system.auth_error"),
        # (a review: the SDKs' own words for refused credentials read as tool errors)
        ("AuthenticationError: Incorrect API key provided: sk-abc***xyz", "system.auth_error"),
        (
            "SMTPAuthenticationError: (535, b'Username and Password not accepted')",
            "system.auth_error",
        ),
        ("ClientError: (ExpiredTokenException) the security token is expired", "system.auth_error"),
        ("BadCredentialsException: Bad credentials", "system.auth_error"),
        ("TokenExpiredError: jwt expired", "system.auth_error"),
        ("RefreshError: invalid_grant: Token has been expired or revoked.", "system.auth_error"),
        ("ExpiredSignatureError: Signature has expired", "system.auth_error"),
        ("Error: gift card token expired on 2024-10-01, cannot apply", "system.tool_error"),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'",
            "system.resource_not_found",
        ),
        ("ModuleNotFoundError: No module named 'pandas'", "system.environment_setup"),
        ("This model's maximum context length is 8192 tokens", "system.resource_exhaustion"),
        ("GraphRecursionError: Recursion limit of 25 reached", "planning.step_limit_exhausted"),
        ("MaxTurnsExceeded: Max turns (10) exceeded", "planning.step_limit_exhausted"),
        ("1 validation error for SearchArgs: date field required", "action.malformed_tool_call"),
        ("ValueError: order id must be digits", "action.malformed_tool_call"),
        ("sku must contain only alphanumeric characters", "action.malformed_tool_call"),
        ("OutputGuardrailTripwireTriggered", "system.guardrail_triggered"),
        ("ZeroDivisionError: division by zero", "system.tool_error"),
    ],
)
def test_errors_are_classified_by_their_text(message: str, mode: str) -> None:
    assert modes(run(ev(0, EventType.TOOL_RESULT, error=message))) == [(mode, 0)]


def test_tool_output_that_shows_a_failure_counts_as_an_error() -> None:
    out = "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n  ...\nKeyError: 'Street Address'"
    findings = run(ev(0, EventType.TOOL_RESULT, agent="Computer_terminal", output=out))
    assert modes(findings) == [("system.tool_error", 0)]
    assert findings[0].evidence[0].field == "output"
    assert "exitcode: 1" in (findings[0].evidence[0].quote or "")


def test_a_result_that_opens_with_an_error_and_its_code_is_a_failure() -> None:
    """A tool that answers "ERROR 402: card declined" as its text (not by raising):
    before, the answer claiming the booking over it went unremarked."""
    out = "ERROR 402: payment declined by the card issuer; no seat was held."
    findings = run(ev(0, EventType.TOOL_RESULT, agent="booker", output=out))
    assert [m for m, _ in modes(findings)] == ["system.tool_error"]


def test_the_word_json_or_error_in_a_prompt_is_not_a_failure() -> None:
    """Rules read only where their signal lives: a user asking for JSON, or talking
    about errors, is not a format error or a tool error."""
    findings = run(
        ev(
            0,
            EventType.USER_INPUT,
            agent="user",
            output="Return valid JSON. Error: if unsure, say so. {bad json",
        ),
        ev(1, EventType.REASONING, output="I must avoid a JSONDecodeError and a timeout."),
        ev(
            2,
            EventType.LLM_CALL,
            input=[{"role": "user", "content": "Traceback (most recent call last): explain"}],
        ),
        ev(
            3,
            EventType.TOOL_CALL,
            input={"query": "json error timeout"},
            metadata={"tool_name": "search"},
        ),
        ev(
            4,
            EventType.TOOL_RESULT,
            output="Results about JSON errors and timeouts",
            metadata={"tool_name": "search"},
        ),
    )
    assert findings == []


def test_malformed_tool_call_arguments_are_found() -> None:
    findings = run(
        ev(0, EventType.TOOL_CALL, input='{"city": "Paris", ', metadata={"tool_name": "weather"}),
        ev(1, EventType.TOOL_CALL, input={"name": "weather", "arguments": "{oops"}),
        ev(
            2,
            EventType.TOOL_CALL,
            input={"x": 1},
            metadata={"tool_name": "ok", "arguments_error": "Expecting value"},
        ),
        ev(3, EventType.TOOL_CALL, input='{"fine": true}', metadata={"tool_name": "ok"}),
    )
    assert modes(findings) == [
        ("action.malformed_tool_call", 0),
        ("action.malformed_tool_call", 1),
        ("action.malformed_tool_call", 2),
    ]


def test_repeated_actions_without_progress_are_found_once() -> None:
    call = {"q": "flights BOS DEN"}
    events = []
    for i in range(4):
        events.append(ev(2 * i, EventType.TOOL_CALL, input=call, metadata={"tool_name": "search"}))
        events.append(
            ev(
                2 * i + 1,
                EventType.TOOL_RESULT,
                output="no results",
                metadata={"tool_name": "search"},
            )
        )
    findings = run(*events)
    assert modes(findings) == [("action.repeated_action", 2)]
    assert "4 times" in findings[0].message


def test_repetition_with_new_results_each_time_is_progress() -> None:
    call = {"page": "next"}
    events = []
    for i in range(4):
        events.append(ev(2 * i, EventType.TOOL_CALL, input=call, metadata={"tool_name": "pager"}))
        events.append(
            ev(
                2 * i + 1,
                EventType.TOOL_RESULT,
                output=f"page {i}",
                metadata={"tool_name": "pager"},
            )
        )
    assert run(*events) == []


def test_short_acknowledgements_repeating_are_not_loops() -> None:
    assert run(*[ev(i, EventType.MESSAGE, output="TERMINATE") for i in range(5)]) == []


def test_premature_success_over_an_unresolved_error() -> None:
    findings = run(
        ev(0, EventType.TOOL_CALL, input={"id": 1}, metadata={"tool_name": "pay"}),
        ev(1, EventType.TOOL_RESULT, error="payment declined", metadata={"tool_name": "pay"}),
        ev(2, EventType.FINAL_ANSWER, output="All done! Your order is complete."),
    )
    assert ("verification.premature_success", 2) in modes(findings)


@pytest.mark.parametrize(
    "answer",
    [
        "Payment could not be completed.",
        "I couldn't book the flight: the card was declined.",
        "We were not able to pay the invoice.",
    ],
)
def test_an_answer_that_reports_the_failure_is_not_premature_success(answer: str) -> None:
    findings = run(
        ev(0, EventType.TOOL_CALL, input={"id": 1}, metadata={"tool_name": "pay"}),
        ev(1, EventType.TOOL_RESULT, error="payment declined", metadata={"tool_name": "pay"}),
        ev(2, EventType.FINAL_ANSWER, output=answer),
    )
    assert "verification.premature_success" not in [m for m, _ in modes(findings)]


def test_an_error_fixed_by_a_later_success_is_not_premature() -> None:
    findings = run(
        ev(0, EventType.TOOL_RESULT, error="payment declined", metadata={"tool_name": "pay"}),
        ev(1, EventType.TOOL_CALL, input={"card": 2}, metadata={"tool_name": "pay"}),
        ev(2, EventType.TOOL_RESULT, output="paid", metadata={"tool_name": "pay"}),
        ev(3, EventType.FINAL_ANSWER, output="All done! Your order is complete."),
    )
    assert [m for m, _ in modes(findings)] == ["system.tool_error"]


def attempts(*outcomes: str) -> list[AgentEvent]:
    """A node run once per outcome ("fail" or "ok"), each attempt after the first
    marked as a retry of the one before (``metadata["retry_of"]``), as LangGraph's
    RetryPolicy runs are captured."""
    events: list[AgentEvent] = []
    before: str | None = None
    for n, outcome in enumerate(outcomes, start=1):
        i = len(events)
        meta = {"retry_of": before, "attempt": n} if before else {}
        events.append(ev(i, EventType.AGENT_START, agent="fetch", metadata=meta))
        if outcome == "fail":
            events.append(
                ev(i + 1, EventType.ERROR, agent="fetch", parent_id=f"e{i}", error="timed out")
            )
        else:
            events.append(ev(i + 1, EventType.AGENT_END, agent="fetch", parent_id=f"e{i}"))
        before = f"e{i}"
    return events


def test_errors_a_retry_got_past_are_information_not_faults() -> None:
    events = attempts("fail", "fail", "ok")
    done = ev(len(events), EventType.FINAL_ANSWER, output="All done, the price is $42.")
    findings = run(*events, done)
    assert [(f.mode_id, f.step_index, f.severity.value) for f in findings] == [
        ("system.timeout", 1, "info"),
        ("system.timeout", 3, "info"),
    ]
    assert "(resolved: attempt 3 at step 4 succeeded)" in findings[0].message
    assert all(f.confidence < 0.5 for f in findings)


def calls(*tried: tuple[str, str | None, str]) -> list[AgentEvent]:
    """A ReAct agent's tool calls: (tool, error or None, agent) each, a result each
    (under its call); the same arguments each time."""
    events: list[AgentEvent] = []
    for tool, error, agent in tried:
        i = len(events)
        events.append(ev(i, EventType.TOOL_CALL, agent=agent, module=tool, input={"q": 1}))
        result = {"error": error} if error else {"output": "ok"}
        events.append(
            ev(i + 1, EventType.TOOL_RESULT, agent, module=tool, parent_id=f"e{i}", **result)
        )
    return events


@pytest.mark.parametrize(
    ("tried", "resolved"),
    [
        # arguments that did not validate, then the same tool called right
        (
            [("search", "ValidationError: date must be YYYY-MM-DD", "a"), ("search", None, "a")],
            True,
        ),
        # an argument in the wrong format, then the same tool called right
        ([("stock", "ValueError: bad sku format", "a"), ("stock", None, "a")], True),
        # an argument of the wrong kind, in the tool's own words, then called right
        ([("refund", "ValueError: not an order id: bob@x.com", "a"), ("refund", None, "a")], True),
        ([("refund", "amount: expected an integer", "a"), ("refund", None, "a")], True),
        # a tool that does not exist, then the right name
        ([("get_wether", "get_wether is not a valid tool", "a"), ("weather", None, "a")], True),
        # an outage, then the very same call (a retry)
        ([("weather", "503 Service Unavailable", "a"), ("weather", None, "a")], True),
        # another tool is no correction of a call whose arguments failed
        ([("search", "ValidationError: date must be YYYY-MM-DD", "a"), ("news", None, "a")], False),
        # nor is another agent's call of it
        (
            [("search", "ValidationError: date must be YYYY-MM-DD", "a"), ("search", None, "b")],
            False,
        ),
        # a resource not found, then another one read: the substitute may be the mistake
        (
            [("read_file", "No such file or directory: 'q3.csv'", "a"), ("read_file", None, "a")],
            False,
        ),
    ],
)
def test_a_tool_error_the_agent_got_past_itself_is_information(
    tried: list[tuple[str, str | None, str]], resolved: bool
) -> None:
    """A ReAct agent reads a validation error (or that the tool does not exist) and
    calls again right, or an outage passes and the same call works: the error
    happened and was dealt with, so it is no candidate for a later failure (before,
    it was blamed for whatever went wrong afterwards), and a final answer is no
    premature success. A resource not found stays one: the substitute the agent
    read instead may be the mistake."""
    events = calls(*tried)
    done = ev(len(events), EventType.FINAL_ANSWER, agent="a", output="All done: sunny.")
    findings = run(*events, done)
    (error,) = [f for f in findings if f.step_index == 1]
    assert (error.severity.value == "info") is resolved
    if resolved:
        assert f"(resolved: the agent's call of {tried[1][0]} at step 3 succeeded)" in error.message
        assert "verification.premature_success" not in [f.mode_id for f in findings]


def test_a_retry_that_fails_too_leaves_the_errors_unresolved() -> None:
    events = attempts("fail", "fail")
    done = ev(len(events), EventType.FINAL_ANSWER, output="All done, the price is $42.")
    found = modes(run(*events, done))
    assert found.count(("system.timeout", 1)) == 1 and ("system.timeout", 3) in found
    assert ("verification.premature_success", 4) in found
    assert all(f.severity.value == "error" for f in run(*events, done))


def test_a_retry_that_never_finished_leaves_the_error_unresolved() -> None:
    """An attempt that stopped (an interrupt, a crash) without its end is no proof."""
    events = attempts("fail", "ok")[:-1]  # the retry's end never came
    done = ev(len(events), EventType.FINAL_ANSWER, output="All done, the price is $42.")
    findings = run(*events, done)
    assert ("system.timeout", 1) in modes(findings)
    assert all(f.severity.value == "error" for f in findings)
    assert ("verification.premature_success", 3) in modes(findings)


def test_an_error_inside_a_retried_node_is_resolved_by_the_retry() -> None:
    """A failure nested under the attempt (a subgraph's node) belongs to it too."""
    outer = ev(0, EventType.AGENT_START, agent="stock")
    inner = ev(1, EventType.AGENT_START, agent="stock/lookup", parent_id="e0")
    failed = ev(2, EventType.ERROR, agent="stock/lookup", parent_id="e1", error="timed out")
    retry = ev(3, EventType.AGENT_START, agent="stock", metadata={"retry_of": "e0", "attempt": 2})
    end = ev(4, EventType.AGENT_END, agent="stock", parent_id="e3")
    findings = run(outer, inner, failed, retry, end)
    assert [(f.mode_id, f.severity.value) for f in findings] == [("system.timeout", "info")]


def test_a_model_call_tried_again_within_its_step_is_resolved_when_the_retry_answers() -> None:
    """A model call's retry or fallback (``with_retry``, ``with_fallbacks``) names
    the failed call itself: an answer without error resolves it, a second failure
    does not."""
    start = ev(0, EventType.AGENT_START, agent="research")
    failed = ev(1, EventType.LLM_RESPONSE, agent="research", parent_id="e0", error="rate limited")
    answered = ev(
        2,
        EventType.LLM_RESPONSE,
        agent="research",
        parent_id="e0",
        output="Paris.",
        metadata={"retry_of": "e1"},
    )
    done = ev(3, EventType.FINAL_ANSWER, output="All done: the capital is Paris.")
    findings = run(start, failed, answered, done)
    assert [(f.mode_id, f.severity.value) for f in findings] == [("system.rate_limited", "info")]
    assert "(resolved: a retry at step 2 succeeded)" in findings[0].message
    again = ev(
        2,
        EventType.LLM_RESPONSE,
        agent="research",
        parent_id="e0",
        error="rate limited",
        metadata={"retry_of": "e1"},
    )
    found = modes(run(start, failed, again, done))
    assert ("verification.premature_success", 3) in found


def test_an_error_its_handler_finished_is_resolved_and_one_that_failed_is_not() -> None:
    """A framework's error handler (LangGraph's ``error_handler`` node) names the
    attempt whose error it handles (``metadata["handles"]``)."""
    start = ev(0, EventType.AGENT_START, agent="fetch")
    failed = ev(1, EventType.ERROR, agent="fetch", parent_id="e0", error="upstream timed out")
    handler = ev(2, EventType.AGENT_START, agent="fallback", metadata={"handles": "e0"})
    end = ev(3, EventType.AGENT_END, agent="fallback", parent_id="e2")
    findings = run(start, failed, handler, end)
    assert [(f.mode_id, f.severity.value) for f in findings] == [("system.timeout", "info")]
    assert "(resolved: its error handler fallback at step 2 finished)" in findings[0].message
    broke = ev(3, EventType.ERROR, agent="fallback", parent_id="e2", error="no cache")
    assert "info" not in [f.severity.value for f in run(start, failed, handler, broke)]


def test_an_error_result_treated_as_success() -> None:
    findings = run(
        ev(
            0,
            EventType.TOOL_RESULT,
            agent="Computer_terminal",
            output="exitcode: 1 (execution failed)\nNameError: x",
        ),
        ev(
            1,
            EventType.MESSAGE,
            agent="Coder",
            output="The code ran successfully, the answer is 42.",
        ),
    )
    assert ("observation.error_ignored", 1) in modes(findings)


def test_a_reply_that_acknowledges_the_error_is_fine() -> None:
    findings = run(
        ev(
            0,
            EventType.TOOL_RESULT,
            agent="Computer_terminal",
            output="exitcode: 1 (execution failed)\nNameError: x",
        ),
        ev(
            1,
            EventType.MESSAGE,
            agent="Coder",
            output="The code failed with a NameError; I will fix it and it should then run successfully.",
        ),
    )
    assert [m for m, _ in modes(findings)] == ["system.tool_error"]


def test_handoff_to_an_unknown_agent() -> None:
    findings = run(
        ev(0, EventType.HANDOFF, agent="triage", metadata={"target": "billing_agent"}),
        ev(1, EventType.HANDOFF, agent="triage", metadata={"target": "refunds"}),
        agents=["triage", "billing_agent"],
    )
    assert modes(findings) == [("coordination.unknown_handoff", 1)]
    assert findings[0].confidence > 0.8


@pytest.mark.parametrize(
    "answer", ["", "None", "  n/a ", "[]", "Error: could not compute", "I'm sorry, I cannot help"]
)
def test_empty_or_invalid_final_answers(answer: str) -> None:
    assert modes(run(ev(0, EventType.FINAL_ANSWER, output=answer))) == [
        ("verification.invalid_final_output", 0)
    ]


def test_a_real_final_answer_is_fine() -> None:
    assert run(ev(0, EventType.FINAL_ANSWER, output="The capital of Australia is Canberra.")) == []


def test_an_outage_the_same_call_got_past_is_resolved_in_a_log_without_parent_links() -> None:
    """A log whose results are filed under no call: each result's call is the
    agent's latest call of that tool before it, so a retry of the very same call
    that worked resolves the outage (before, only parent links told it)."""

    def event(i: int, kind: EventType, **fields: Any) -> AgentEvent:
        return AgentEvent(id=f"e{i}", step_index=i, agent_name="w", type=kind, **fields)

    ask = {"tool": "get_weather", "arguments": {"city": "Paris"}}
    meta = {"tool_name": "get_weather"}
    run = AgentTrajectory(
        id="outage",
        events=[
            event(1, EventType.TOOL_CALL, input=ask, metadata=meta),
            event(
                2,
                EventType.TOOL_RESULT,
                error=ErrorInfo(message="503 Service Unavailable"),
                metadata=meta,
            ),
            event(3, EventType.TOOL_CALL, input=ask, metadata=meta),
            event(4, EventType.TOOL_RESULT, output="sunny", metadata=meta),
            event(5, EventType.FINAL_ANSWER, output="It is sunny."),
        ],
    )
    (outage,) = [f for f in RulePack().detect(run) if f.step_index == 2]
    assert "resolved: the agent's call of get_weather at step 4 succeeded" in outage.message


@pytest.mark.parametrize(
    "message",
    [
        "writer's run r1: the outline was not found",
        "the outline was not found",
    ],  # (as stored before, and now)
)
def test_a_declared_sub_run_failure_is_the_sub_agents_failed_task(message: str) -> None:
    """Its reason is the sub-agent's prose, not an error's text: "the outline was not found"
    is no missing resource of the run that delegated, and the reason reads once."""
    (finding,) = run(
        ev(
            0,
            EventType.ERROR,
            "writer",
            error=ErrorInfo(type="SubRunFailed", message=message),
            metadata={"sub_run": "r1", "sub_run_status": "failure"},
        )
    )
    assert finding.mode_id == "coordination.delegated_task_failed"
    assert finding.message == "writer's run r1 failed: the outline was not found"


def _date_calls(first: dict[str, Any], error: str, second: dict[str, Any]) -> list[AgentEvent]:
    return [
        ev(0, EventType.TOOL_CALL, agent="a", module="find_slots", input=first),
        ev(1, EventType.TOOL_RESULT, agent="a", module="find_slots", parent_id="e0", error=error),
        ev(2, EventType.TOOL_CALL, agent="a", module="find_slots", input=second),
        ev(3, EventType.TOOL_RESULT, agent="a", module="find_slots", parent_id="e2", output="ok"),
    ]


@pytest.mark.parametrize(
    ("first", "error", "second", "resolved"),
    [
        # the tool refused the value it was given, quoting it; called again without it
        (
            "next Tuesday",
            "ValueError: Invalid isoformat string: 'next Tuesday'",
            "2024-06-11",
            True,
        ),
        ("tmrw", 'cannot parse "tmrw" as a date', "2024-06-11", True),
        # called again with the very value it refused: nothing was corrected
        (
            "next Tuesday",
            "ValueError: Invalid isoformat string: 'next Tuesday'",
            "next Tuesday",
            False,
        ),
        # an error quoting a value the call did not give: not the call's own fault
        (
            "2024-06-11",
            "ValueError: invalid literal for int() with base 10: 'N/A'",
            "2024-06-12",
            False,
        ),
        # an error quoting its value without refusing it: a failure of another kind
        ("next Tuesday", "RuntimeError: calendar 'next Tuesday' is locked", "2024-06-11", False),
        # LangGraph ToolNode's own text, the error's repr; an apostrophe before the quote
        (
            "next Tuesday",
            "Error: ValueError(\"Invalid isoformat string: 'next Tuesday'\")\n Please fix",
            "2024-06-11",
            True,
        ),
        ("tmrw", "Can't parse 'tmrw' as a date", "2024-06-11", True),
        # no such thing found, not a value's form: the substitute may be the mistake
        ("Springfeld", "ValueError: Unknown city 'Springfeld'", "Springfield, MA", False),
        ("ACC-1042", "Invalid account 'ACC-1042'", "ACC-1043", False),
    ],
)
def test_an_error_refusing_the_calls_own_value_is_got_past_by_a_corrected_call(
    first: str, error: str, second: str, resolved: bool
) -> None:
    """A tool whose error, of no known kind, refuses a value of the call's own
    arguments (``date.fromisoformat("next Tuesday")``): the model read it and called
    again with an ISO date, which worked. Before, the error stayed a candidate and a
    later mistake (a 30-minute booking for a one-hour meeting) was blamed on it."""
    events = _date_calls({"day": first}, error, {"day": second})
    done = ev(4, EventType.FINAL_ANSWER, agent="a", output="Booked for Tuesday.")
    (failed,) = [f for f in run(*events, done) if f.step_index == 1]
    assert (failed.severity.value == "info") is resolved
    if resolved:
        assert "(resolved: the agent's call of find_slots at step 3 succeeded)" in failed.message


@pytest.mark.parametrize(
    ("said", "mode"),
    [
        ("PIIDetectionError: Detected 1 instance(s) of email in text content",
         "system.guardrail_triggered"),
        ("Tool call limit exceeded. Do not make additional tool calls.",
         "planning.step_limit_exhausted"),
        ("ModelCallLimitExceededError: Model call limits exceeded: run limit (2/2)",
         "planning.step_limit_exhausted"),
    ],
)  # fmt: skip
def test_a_middlewares_own_stop_is_read_as_what_it_is(said: str, mode: str) -> None:
    """create_agent's PII guardrail and call limits stop a run in their own words;
    read as a tool error, they got "fix its cause (arguments, code...)" (a review's
    find)."""
    from agentdebug.detect.signals import classify_error

    assert classify_error(said) == mode
