"""What the rules look at: event kinds, error classes, tools and handoff targets.

Shared by the rule pack and the heuristic attributor. Error text is classified by
where its signal lives: error fields and tool outputs only, never an agent's prose.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import orjson

from agentdebug.schema import AgentEvent, ErrorInfo, EventType
from agentdebug.text import compact_json, flatten

# An imported LLM span (OpenTelemetry) is one LLM_CALL event holding the model's
# output, so it is a decision too; captured runs record the output as LLM_RESPONSE.
ACTION_TYPES = frozenset(
    {
        EventType.TOOL_CALL,
        EventType.HANDOFF,
        EventType.MESSAGE,
        EventType.LLM_CALL,
        EventType.LLM_RESPONSE,
        EventType.UI_ACTION,
    }
)
RESULT_TYPES = frozenset({EventType.TOOL_RESULT, EventType.OBSERVATION})
SPEECH_TYPES = frozenset(
    {
        EventType.MESSAGE,
        EventType.LLM_RESPONSE,
        EventType.REASONING,
        EventType.PLAN,
        EventType.FINAL_ANSWER,
        EventType.HANDOFF,
    }
)
DECISION_TYPES = ACTION_TYPES | SPEECH_TYPES

# a quoted text: a quote opens and closes away from a word ("the model's answer 'x'"
# quotes x alone)
QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)|(?<!\w)\"([^\"]+)\"(?!\w)")

# words that admit a failure (an answer saying so reports it honestly)
ERROR_ACK = re.compile(
    r"\b(?:error|errors|fail(?:ed|s|ure)?|exception|traceback|issue|problem|retry|fix|"
    r"did not work|didn't work|unable|cannot|can't|could not|couldn't|"
    r"(?:was|were|is|are) not able|(?:wasn't|weren't) able|unsuccessful(?:ly)?)\b",
    re.I,
)


# failures of the world a call reached, not of the call: its decision is not at fault
ENVIRONMENT_MODES = frozenset(
    {
        "system.timeout",
        "system.rate_limited",
        "system.auth_error",
        "system.guardrail_triggered",
        "system.resource_exhaustion",
        "system.service_unavailable",
    }
)


def _status(codes: str) -> str:
    """An HTTP status said as one ("Error 401", "HTTP 503", "status: 429", "404 Client
    Error", a text that opens with it), not any number ("flight LH 401")."""
    return (
        rf"(?:\b(?:error|http|status|code|returned|response)\W{{0,3}}|^\W*){codes}\b|"
        rf"\b{codes} (?:client |server )?error\b"
    )


# Error text -> failure mode, most specific first. Matched against error fields and
# tool outputs only.
ERROR_CLASSES: list[tuple[str, re.Pattern[str]]] = [
    (
        "planning.step_limit_exhausted",
        re.compile(
            r"recursion limit|GraphRecursionError|MaxTurnsExceeded|max(?:imum)?[ _-]?"
            r"(?:iterations|turns|steps)|step limit|iteration limit|"
            r"(?:tool|model) call limits? (?:exceeded|reached)|CallLimitExceeded",  # (middleware)
            re.I,
        ),
    ),
    (
        "system.guardrail_triggered",
        re.compile(
            r"guardrail|tripwire|content (?:policy|filter)|PIIDetectionError|"
            r"personal(?:ly identifiable)? (?:data|information) detected",
            re.I,
        ),
    ),
    (
        "system.resource_exhaustion",
        re.compile(
            r"context[_ ]length|maximum context|context window|out of memory|MemoryError|"
            r"quota exceeded|insufficient[_ ]quota|token limit",
            re.I,
        ),
    ),
    (
        "system.rate_limited",
        re.compile(_status("429") + r"|rate[ _-]?limit|too many requests", re.I),
    ),
    (
        "system.auth_error",
        re.compile(
            _status("40[13]")
            + r"|unauthori[sz]ed|forbidden|permission denied|(?:invalid|incorrect) api[ _-]?key|"
            r"authentication ?(?:failed|error)|authenticationerror|bad credentials|"
            r"invalid credentials|expired ?token|expiredsignature|jwt expired|"
            r"signature has expired|token has been expired or revoked|"
            r"(?:access|auth|security|session|bearer|id|refresh|oauth|api)[ _-]?token "
            r"(?:has |is )?expired|"
            r"(?:username|user name) and password not accepted",
            re.I,
        ),
    ),
    ("system.timeout", re.compile(r"timed? ?out|timeout|deadline exceeded", re.I)),
    (
        "system.service_unavailable",
        re.compile(
            _status("50[234]") + r"|service (?:is )?(?:temporarily )?unavailable|bad gateway|"
            r"connection (?:refused|reset|aborted)|Connection(?:Refused|Reset|Aborted)?Error|"
            r"(?:server|service|host) (?:is )?(?:down|unreachable)",
            re.I,
        ),
    ),
    (
        "action.malformed_tool_call",
        re.compile(
            r"validation ?error|invalid (?:tool )?arguments?|unknown tool|not a valid tool|"
            r"tool .{0,40} (?:does not exist|not found)|missing (?:\d+ )?required "
            r"(?:positional )?(?:argument|parameter)|unexpected keyword argument|"
            r"could not parse (?:the )?tool|"
            r"\b(?:bad|invalid|wrong|malformed) (?:\w+ ){0,2}format\b|"
            # an argument of the wrong kind, in a tool's own words ("not an order id:
            # bob@x.com", "expected an integer", "amount must be a positive number",
            # "order id must be digits")
            r"\bnot an? (?:valid )?(?:\w+ )?(?:id|identifier|number|integer|email(?: address)?|"
            r"date|uuid|url)\b|\bexpected (?:an? )?(?:int|integer|float|number|string|str|"
            r"list|array|dict|object|boolean|bool)\b|\bmust be (?:an? )?(?:valid |positive |"
            r"non-negative )?(?:int|integer|number|string|list|date|email)\b|"
            r"\bmust (?:be|contain) (?:only )?(?:all )?(?:digits|numeric|alphanumeric|"
            r"letters|numbers)\b",
            re.I,
        ),
    ),
    (
        "system.environment_setup",
        re.compile(
            r"ModuleNotFoundError|No module named|ImportError|command not found|not installed",
            re.I,
        ),
    ),
    (
        "system.resource_not_found",
        re.compile(
            _status("404")
            + r"|FileNotFoundError|No such file or directory|does not exist|not found|"
            r"\bLookupError\b",
            re.I,
        ),
    ),
]

# Failure markers in a tool's own output, for tools that report failure in text.

_OUTPUT_FAILURE = re.compile(
    r"exitcode:\s*[1-9]|execution failed|Traceback \(most recent call last\)|"
    r"^\s*(?:Error|Exception|\w+Error)(?: \d{3})?:",  # ("Error 402: card declined")
    re.I | re.M,
)


# A tool that reports failure as data: a bare HTTP status line ("503 Service
# Unavailable", "HTTP/1.1 404 Not Found"), only with a standard reason phrase, so
# "500 Days of Summer" is not one.
_HTTP_STATUS_LINE = re.compile(
    r"\A\s*(?:HTTP/\d(?:\.\d)?\s+)?[45]\d\d\s+(?:Bad Request|Unauthori[sz]ed|"
    r"Payment Required|Forbidden|Not Found|Method Not Allowed|Not Acceptable|"
    r"Request Time-?out|Conflict|Gone|Payload Too Large|Unsupported Media Type|"
    r"Unprocessable (?:Entity|Content)|Too Many Requests|Internal Server Error|"
    r"Not Implemented|Bad Gateway|Service (?:Temporarily )?Unavailable|Gateway Time-?out)"
    r"\b[^\n]{0,200}(?:\n|\Z)",
    re.I,
)
_ERROR_STATUSES = frozenset({"error", "failed", "failure", "fail"})
_MESSAGE_KEYS = ("message", "error", "detail", "reason", "description", "msg")


def _message_of(payload: Any) -> tuple[str, str] | None:
    """(text to classify, quote) of an error value: a string, or an error object's
    message (its type or code, if any, goes before it in the text to classify)."""
    if isinstance(payload, str):
        text = payload.strip()
        return (text, text) if text else None
    if isinstance(payload, dict):
        kind = next(
            (str(payload[k]) for k in ("type", "code") if isinstance(payload.get(k), (str, int))),
            "",
        )
        for key in _MESSAGE_KEYS:
            found = _message_of(payload.get(key))
            if found:
                text, quote = found
                return (f"{kind}: {text}" if kind and kind not in text else text), quote
        if kind.strip():
            return kind.strip(), kind.strip()
    return None


def _messages(payload: dict[str, Any], *, without: str) -> tuple[str, str] | None:
    return _message_of({k: v for k, v in payload.items() if k in _MESSAGE_KEYS and k != without})


def structured_error(payload: Any) -> tuple[str, str] | None:
    """(text to classify, quote) of the error a tool reported as a JSON object.

    ``{"error": "503 Service Unavailable"}``, ``{"error": {"message": ...}}``,
    ``{"status": "error", "message": ...}``, ``{"status": 503, ...}``,
    ``{"ok": false, "error": ...}``. A key that merely names an error in data
    (``{"errors_count": 0}``, ``{"error": null}``, ``{"error": false}``) is none.
    A JSON string is read as its object."""
    raw = payload
    if isinstance(payload, str):
        text = payload.strip()
        if not (text.startswith("{") and text.endswith("}")) or len(text) > 20000:
            return None
        try:
            payload = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(payload, dict):
        return None
    whole = raw.strip() if isinstance(raw, str) else compact_json(payload)
    error = payload.get("error")
    if error is True:  # {"error": true, "message": "..."}
        return _messages(payload, without="error") or ("error", whole)
    if error is not None and error is not False:
        return _message_of(error)
    status = payload.get("status")
    if isinstance(status, str) and status.strip().lower() in _ERROR_STATUSES:
        return _messages(payload, without="status") or (f"status: {status}", whole)
    code = next((payload[k] for k in ("status", "status_code", "statusCode") if k in payload), None)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        found = _messages(payload, without="status")
        return (f"{code} {found[0]}", found[1]) if found else (str(code), whole)
    if payload.get("ok") is False or payload.get("success") is False:
        return _messages(payload, without="")
    return None


def _output_failure(output: Any) -> tuple[str, str] | None:
    """(text to classify, quote) of the failure a tool result reports in its output."""
    text = flatten(output, limit=20000)
    match = _OUTPUT_FAILURE.search(text)
    if match:
        return text, text[match.start() : match.start() + 160].strip()
    for candidate in (output, text):
        reported = structured_error(candidate)
        if reported:
            return reported[0], reported[1][:300]
    status = _HTTP_STATUS_LINE.match(text)
    if status:
        return text, status.group(0).strip()
    return None


def classify_error(text: str) -> str:
    for mode_id, pattern in ERROR_CLASSES:
        if pattern.search(text):
            return mode_id
    return "system.tool_error"


# an observation's metadata that makes it a note of the agent's own (what a LangGraph
# node wrote to its stream writer, or dispatched as a custom event): progress it
# reports, not a tool's result, so "error: primary API timed out, trying the backup"
# there is no failed call
NOTE_KEYS = ("stream_writer", "custom_event")


def is_note(event: AgentEvent) -> bool:
    return event.type is EventType.OBSERVATION and any(k in event.metadata for k in NOTE_KEYS)


def tool_name(event: AgentEvent) -> str | None:
    if is_note(event):
        return None  # (no tool's: its module names who recorded it)
    meta = event.metadata
    for key in ("tool_name", "tool", "function"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    if isinstance(event.input, dict):
        for key in ("tool_name", "tool", "name"):
            value = event.input.get(key)
            if isinstance(value, str) and value:
                return value
    return event.module


def handoff_target(event: AgentEvent) -> str | None:
    for key in ("target", "to_agent", "target_agent", "to"):
        value = event.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    for payload in (event.input, event.output):
        if isinstance(payload, dict):
            for key in ("target", "to_agent", "agent", "assistant"):
                value = payload.get(key)
                if isinstance(value, str) and value:
                    return value
    return None


# metadata of an AGENT_START: a branch of a fan-out, one of several runs of its node
# that one step started to run at once (LangGraph's ``Send``), not a loop's turn
FAN_OUT = "send"

# a finding's metadata["answer"]: the final answer reports an error or refuses (an
# end of the run, like a premature success: a symptom, not the decision that caused it)
ERROR_OR_REFUSAL = "error_or_refusal"

# metadata of an error event: the failure mode the integration that recorded it knows
# the error to be (a framework's own error, placed at the step it concerns), which then
# goes before the error's text
FAILURE_MODE = "failure_mode"


# metadata of an outer run's event that reports how one of its sub-runs went (see
# agentdebug.capture.nesting): the sub-run's id
SUB_RUN = "sub_run"
# the mode of a sub-run's failure reported into the run it was within: the task the
# calling agent delegated came back failed (declared so, or raised nothing more telling)
DELEGATED_TASK_FAILED = "coordination.delegated_task_failed"
# the error type of a failure a sub-run declared (set_outcome) rather than raised
SUB_RUN_FAILED = "SubRunFailed"
# metadata of an event the run's own code gave, not an agent it named (recorded by
# agentdebug.capture.ending: an exception that left the run's ``with`` block, the
# final answer given only to ``set_outcome``); its value says which
BY_THE_RUN = "by_the_run"
# metadata of an error event an agent's step recorded without raising: it stopped
# the run itself at a limit and said so in its answer (LangGraph's prebuilt agent
# out of steps, a call-limit middleware ending the run); said as "stopped", not "raised"
ENDED_ITSELF = "ended_itself"


def sub_run_failure(event: AgentEvent) -> tuple[str, str] | None:
    """(mode, quote) of a sub-run's failure reported into the run it was within, or
    None for any other event. A failure the sub-run declared is its agent's failed
    task, whatever its reason says (the reason is the agent's prose, not an error's
    text); one it raised is classified by the exception, a generic one being the
    failed task too. The quote is the failure itself: before, a declared failure's
    message repeated "<agent>'s run <id>: " ahead of its reason, which is cut."""
    error, sub_run = event.error, event.metadata.get(SUB_RUN)
    if error is None or event.type is not EventType.ERROR or not sub_run:
        return None
    message = error.message.removeprefix(f"{event.agent_name}'s run {sub_run}: ")
    if not error.type or error.type == SUB_RUN_FAILED:
        return DELEGATED_TASK_FAILED, message
    mode = classify_error(f"{error.type}: {message}")
    return (DELEGATED_TASK_FAILED if mode == "system.tool_error" else mode), message


def error_text(error: ErrorInfo) -> str:
    """``Type: message``, the type once even when the message starts with it."""
    if error.type and not error.message.startswith(error.type):
        return f"{error.type}: {error.message}"
    return error.message


def failure_of(event: AgentEvent) -> tuple[str, str] | None:
    """(mode, quote) when the event reports a failure in its error field or tool output."""
    if event.error is not None:
        known = event.metadata.get(FAILURE_MODE)
        if isinstance(known, str) and known:
            return known, event.error.message
        delegated = sub_run_failure(event)
        if delegated is not None:
            return delegated
        text = (
            event.error.message
            if not event.error.type
            else f"{event.error.type}: {event.error.message}"
        )
        return classify_error(text), event.error.message
    if event.type in RESULT_TYPES and not is_note(event):
        failure = _output_failure(event.output)
        if failure is not None:
            return classify_error(failure[0]), failure[1]
    return None


# a run's metadata: the shared state its steps' updates write to, as the framework
# declares it (a LangGraph StateGraph's channels): {"keys": [...], "reducers": {key:
# the name of the function that merges an update into the key}}; an update to a key
# that is not one the framework drops without an error (see detect/unmerged.py)
STATE_SCHEMA = "state_schema"
# metadata of a run's first step's start a framework integration may give: the system
# instructions its agent's conversation held as that step began (LangGraph: the system
# messages of the state's message list, an earlier turn's on a thread too), as texts;
# an answer whose prompt no longer holds them was given without them (detect/trimmed.py)
INSTRUCTIONS = "instructions"

RETRY_OF = "retry_of"  # metadata of an attempt's start: the start of the attempt it retries
# a finding's or root cause's metadata: its fix is to code that ran, which a rerun
# from its step would run unchanged (no rerun is planned for it)
CODE_FIX = "code_fix"
# metadata of an event filed under another step's decision (a tool's result under the
# model call that asked for it): the start of the node run (attempt) it ran in
RAN_IN = "ran_in"
# metadata of a step's start: the start of the failed attempt whose error this step
# handles (a framework's error handler, LangGraph's ``error_handler`` node); an error
# whose handler finished is resolved, as one a retry got past
HANDLES = "handles"
# metadata of a step's start and end: the framework served its result from a cache
# (LangGraph's node cache), so nothing ran; what it returned is what a run before did
CACHED = "cached"


def resolved_by_retry(
    events: Sequence[AgentEvent], failures: Collection[str]
) -> dict[str, AgentEvent]:
    """Failures whose work a later attempt did again, and finished: failure id ->
    the start of that attempt.

    The convention, for integrations whose framework retries (LangGraph's
    ``RetryPolicy``): an attempt's start event carries ``metadata["retry_of"]``,
    the id of the start of the attempt before, and an attempt that finished has an
    ``AGENT_END`` without error under its start. A failure belongs to an attempt
    when the attempt's start is among its parents (a failure inside a subgraph
    belongs to the retried node that runs the subgraph too), or among the events a
    failure or a parent of it ran in (``metadata["ran_in"]``: a tool's result,
    filed under the model step that asked for the call, ran in the tool node's
    attempt). An error handler's start names the attempt whose error it handles
    (``metadata["handles"]``) and counts as the attempt after it. A call tried
    again within a step (a model call's retry or fallback: LangChain's
    ``with_retry``, ``with_fallbacks``) names the failed call itself: the retry is
    that result, finished when it carries no error. A chain of retries resolves
    the failure only if one of its attempts finished: one that failed, stopped at
    an interrupt or was cut off does not."""
    retries: dict[str, AgentEvent] = {}
    for event in events:
        before = event.metadata.get(RETRY_OF) or event.metadata.get(HANDLES)
        if isinstance(before, str) and before:
            retries.setdefault(before, event)
    if not retries:
        return {}
    by_id = {e.id: e for e in events}
    finished = {
        e.parent_id
        for e in events
        if e.type is EventType.AGENT_END and e.error is None and e.parent_id
    }
    out: dict[str, AgentEvent] = {}
    for failure in failures:
        todo, seen = [failure], set()
        while todo and failure not in out:
            node = by_id.get(todo.pop())
            if node is None or node.id in seen:
                continue
            seen.add(node.id)
            attempt, tried = retries.get(node.id), set()
            while attempt is not None and attempt.id not in tried:
                tried.add(attempt.id)
                answered = attempt.type is not EventType.AGENT_START and attempt.error is None
                if attempt.id in finished or (answered and attempt.id not in failures):
                    out[failure] = attempt
                    break
                attempt = retries.get(attempt.id)
            ran_in = node.metadata.get(RAN_IN)
            if isinstance(ran_in, str) and ran_in:
                todo.append(ran_in)
            if node.parent_id:
                todo.append(node.parent_id)
    return out
