"""OpenTelemetry spans as a trajectory: the mapping shared by the TRAIL and OTLP importers.

Both importers first turn their file into :class:`Span` objects (plain values,
attributes as one flat dict) and then call :func:`spans_to_trajectory`, so a span
means the same thing whichever file it came from. What individual attributes mean
(OpenInference, GenAI conventions) is in :mod:`agentdebug.io.semconv`.

Decisions:

* One span is one event. The event id is the span id (so span ids quoted
  elsewhere, such as TRAIL's annotation ``location``, are event ids) and
  ``parent_id`` the parent span id (None where the parent is not in the file; the
  id is kept in ``metadata.missing_parent``).
* Order is start time, ties broken by tree preorder; ``step_index`` is the
  position in that order.
* Types: LLM spans are LLM_CALL (input = the input messages, output = the output
  message's text, or the message with its tool calls); TOOL spans are one
  TOOL_CALL event carrying both the arguments (input) and the result (output);
  AGENT spans are an AGENT_START with the agent's input and, after the events
  under it, an AGENT_END (id ``<span id>/end``) with its output and error, as a
  LangGraph node's start and end (none when the agent gave nothing back, or when
  its output is the run's answer: the FINAL_ANSWER below holds that; before, the
  start held the output, so an agent read as starting with its result);
  RETRIEVER spans MEMORY_READ; everything else
  (CHAIN, plain functions) SPAN. smolagents ``Step N`` spans keep ``N`` in
  ``metadata.agent_step``.
* The run's final answer is an event of type FINAL_ANSWER, as in every other
  format, so completion rules (premature success, an invalid answer) read it: the
  top agent's call of a ``final_answer`` tool (smolagents' ``FinalAnswerTool``,
  the answer taken from its arguments when it records no output), else its last
  LLM call whose text is the agent span's output, else (an output in text) an
  event of its own after the others, id ``<agent span id>/final_answer``.
* A span with error status gets ``error``: the status message, else the
  exception event's message, with the exception type and stack trace.
* ``agent_name`` is the span's own ``gen_ai.agent.name`` or the name of the
  nearest enclosing agent span (see :func:`~agentdebug.io.semconv.agent_label`;
  ``CodeAgent.run`` -> ``CodeAgent``). Spans outside every agent have none.
* Attribute values are kept whole; those not turned into a field stay in
  ``metadata.attributes``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from agentdebug.errors import InputError
from agentdebug.io._common import from_validation_error, json_size
from agentdebug.io.semconv import (
    agent_label,
    content_fields,
    event_content,
    span_kind,
    task_of,
    unflatten,
)
from agentdebug.limits import MAX_EVENT_BYTES_ENV, max_event_bytes
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STEP = re.compile(r"^Step (\d+)$")
_EXC_PREFIX = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)):")
_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)

KIND_TO_TYPE = {
    "LLM": EventType.LLM_CALL,
    "TOOL": EventType.TOOL_CALL,
    "AGENT": EventType.AGENT_START,
    "RETRIEVER": EventType.MEMORY_READ,
}


@dataclass
class Span:
    """One span, read from whatever file format, before it becomes an event."""

    span_id: str
    parent_id: str | None
    name: str
    attributes: dict[str, Any]
    start: datetime | None = None
    duration_ms: float | None = None
    status: str = "unset"  # "ok" | "error" | "unset"
    status_message: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    otel_kind: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Where the span is in its file, e.g. ``spans[0].child_spans[2]`` (in its
    #: line, for a span read from JSON Lines).
    path: str = ""
    #: Where the attributes are, relative to ``path``.
    attributes_path: str = "attributes"
    #: Input and output a format found outside the attributes (TRAIL function logs).
    fallback_input: Any = None
    fallback_output: Any = None
    #: The line of a JSON Lines file the span was read from.
    line: int | None = None

    def at(self) -> str:
        """Where the span is, in words: ``line 3``, ``spans[0].child_spans[2]``."""
        where = " ".join(p for p in (f"line {self.line}" if self.line else "", self.path) if p)
        return where or f"span {self.span_id!r}"


# -- small readers ----------------------------------------------------------------------


def parse_iso_duration(value: Any) -> float | None:
    """``PT1M48.75533S`` -> 108755.33 (milliseconds); None if not an ISO-8601 duration."""
    if not isinstance(value, str):
        return None
    match = _ISO_DURATION.match(value.strip())
    if not match or value.strip() in ("P", "PT"):
        return None
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    seconds = parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    return round(seconds * 1000.0, 3)


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO-8601 string (``Z`` allowed) as an aware datetime; naive means UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def from_unix_nano(value: Any) -> datetime | None:
    try:
        nanos = int(value)
    except (TypeError, ValueError):
        return None
    if nanos <= 0:
        return None
    return _EPOCH + timedelta(microseconds=nanos // 1000)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _error(span: Span) -> dict[str, Any] | None:
    exception = next((e for e in span.events if e.get("name") == "exception"), None)
    if span.status != "error":
        return None
    attrs = exception.get("attributes", {}) if exception else {}
    message = span.status_message or attrs.get("exception.message") or "span status is ERROR"
    exc_type = attrs.get("exception.type")
    if not exc_type:
        prefix = _EXC_PREFIX.match(str(message))
        exc_type = prefix.group(1) if prefix else None
    return {
        "message": str(message),
        "type": str(exc_type) if exc_type else None,
        "traceback": attrs.get("exception.stacktrace"),
    }


# -- the trajectory ---------------------------------------------------------------------


def _ordered(spans: Sequence[Span]) -> list[Span]:
    """Start-time order; ties (and spans without a start) by tree preorder."""
    by_id = {s.span_id: s for s in spans}
    children: dict[str | None, list[tuple[int, Span]]] = {}
    for position, span in enumerate(spans):
        parent = span.parent_id if span.parent_id in by_id else None
        children.setdefault(parent, []).append((position, span))
    preorder: list[Span] = []
    starts: dict[str, int] = {}

    def key(item: tuple[int, Span]) -> tuple[int, int]:
        return (starts.get(item[1].span_id, 0), item[0])

    def kids_of(parent: str | None, inherited: int) -> Iterator[tuple[int, Span]]:
        kids = children.get(parent, [])
        for _, span in kids:
            starts[span.span_id] = _micros(span.start) if span.start else inherited
        return iter(sorted(kids, key=key))

    # (a stack, not recursion: a trace may nest spans thousands deep)
    stack = [kids_of(None, 0)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        span = item[1]
        preorder.append(span)
        stack.append(kids_of(span.span_id, starts[span.span_id]))
    rank = {s.span_id: i for i, s in enumerate(preorder)}
    return sorted(preorder, key=lambda s: (starts[s.span_id], rank[s.span_id]))


def _agent_names(
    spans: Sequence[Span], kinds: Mapping[str, str], by_id: Mapping[str, Span]
) -> dict[str, str | None]:
    """Each span's agent: its own ``gen_ai.agent.name`` or the nearest agent span's name.

    Worked out along parent links, not in time order, so a child whose clock runs
    ahead of its parent's still finds its agent (walking up, not recursing: a
    trace may nest spans thousands deep).
    """
    names: dict[str, str | None] = {}
    for span in spans:
        below: list[str] = []  # spans whose agent is the one found further up
        at: Span | None = span
        result: str | None = None
        while at is not None:
            if at.span_id in names:  # (known, or on this walk: a parent cycle)
                result = names[at.span_id]
                break
            names[at.span_id] = None
            below.append(at.span_id)
            own = at.attributes.get("gen_ai.agent.name")
            if kinds[at.span_id] == "AGENT":
                result = agent_label(at.name, at.attributes)
                break
            if isinstance(own, str) and own:
                result = own
                break
            at = by_id.get(at.parent_id) if at.parent_id else None
        for span_id in below:
            names[span_id] = result
    return names


def _managed_roles(spans: Sequence[Span], kinds: Mapping[str, str]) -> dict[str, str]:
    """What a smolagents manager says each of its managed agents is for."""
    roles: dict[str, str] = {}
    for span in spans:
        if kinds[span.span_id] != "AGENT":
            continue
        managed = unflatten(span.attributes, "smolagents.managed_agents")
        for entry in managed if isinstance(managed, list) else []:
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                roles.setdefault(entry["name"], str(entry.get("description") or ""))
    return roles


def _framework(scopes: Iterable[str]) -> str | None:
    for scope in scopes:
        if scope.startswith("openinference.instrumentation."):
            return scope.split(".", 2)[2]
    return None


_MODEL_CALLS = (EventType.LLM_CALL, EventType.LLM_RESPONSE)


def spans_to_trajectory(
    spans: Sequence[Span],
    *,
    trajectory_id: str,
    source: str,
    framework: str | None = None,
    goal: str | None = None,
    reference_answer: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> AgentTrajectory:
    """One trajectory from the spans of one trace (see the module docstring)."""
    if not spans:
        raise InputError("no events: the trace has no spans", source=source)
    seen: dict[str, Span] = {}
    for span in spans:
        if span.span_id in seen:
            raise InputError(
                f"duplicate span id {span.span_id!r} (also at {seen[span.span_id].at()})",
                source=source,
                record=span.span_id,
                field=span.path or None,
                lineno=span.line,
            )
        seen[span.span_id] = span
    limit = max_event_bytes()
    ordered = _ordered(spans)
    if len(ordered) != len(spans):
        placed = {s.span_id for s in ordered}
        stray = next(s for s in spans if s.span_id not in placed)
        raise InputError(
            f"span {stray.span_id!r} is its own ancestor (parent links form a cycle)",
            source=source,
            record=stray.span_id,
            field=stray.path or None,
            lineno=stray.line,
        )
    for span in spans:
        declared = span.attributes.get("openinference.span.kind")
        if declared is not None and not isinstance(declared, str):
            where = f"{span.path}.{span.attributes_path}" if span.path else span.attributes_path
            raise InputError(
                f"expected a span kind such as 'AGENT', 'LLM' or 'TOOL', got {declared!r}",
                source=source,
                record=span.span_id,
                field=f"{where}.openinference.span.kind",
                lineno=span.line,
            )
    kinds = {span.span_id: span_kind(span.attributes) for span in spans}
    names = _agent_names(spans, kinds, seen)
    managed_roles = _managed_roles(spans, kinds)
    agents: dict[str, AgentInfo] = {}
    root_agent: tuple[Span, Any, Any] | None = None
    scopes: list[str] = []
    events: list[AgentEvent] = []
    agent_spans: list[tuple[Span, Any, dict[str, Any] | None]] = []  # (span, output, error)

    for step, span in enumerate(ordered):
        _check_span_size(span, source, limit)
        kind = kinds[span.span_id]
        used: set[str] = {"openinference.span.kind", "gen_ai.operation.name", "gen_ai.agent.name"}
        inp, out, meta = content_fields(span.attributes, kind, used)
        read_events: set[int] = set()
        if kind == "LLM" and (inp is None or out is None):
            said_in, said_out, read_in, read_out = event_content(span.events)
            read_events = (read_in if inp is None else set()) | (read_out if out is None else set())
            inp = said_in if inp is None else inp
            out = said_out if out is None else out
        if inp is None:
            inp = span.fallback_input
        if out is None:
            out = span.fallback_output
        agent_name = names.get(span.span_id)
        if kind == "AGENT" and agent_name is not None:
            used.update(("agent.name", "smolagents.name"))
            if agent_name not in agents:
                role = managed_roles.get(agent_name) or meta.get("agent_description")
                agents[agent_name] = AgentInfo(
                    name=agent_name,
                    role=str(role) if role else None,
                    tools=list(meta.get("tools") or []),
                )
            if root_agent is None:
                root_agent = (span, inp, out)
        step_match = _STEP.match(span.name)
        if step_match:
            meta["agent_step"] = int(step_match.group(1))
        if kind:
            meta["kind"] = kind
        if span.otel_kind:
            meta["span_kind"] = span.otel_kind
        meta["status"] = span.status
        if span.status_message and span.status != "error":
            meta["status_message"] = span.status_message
        other_events = [
            e
            for i, e in enumerate(span.events)
            if (e.get("name") != "exception" or span.status != "error") and i not in read_events
        ]
        if other_events:
            meta["span_events"] = other_events
        leftover = {k: v for k, v in span.attributes.items() if k not in used}
        if leftover:
            meta["attributes"] = leftover
        for key, value in span.metadata.items():
            meta.setdefault(key, value)
        if isinstance(meta.get("scope"), str):
            scopes.append(meta["scope"])
        parent_id = span.parent_id if span.parent_id in seen else None
        if span.parent_id and parent_id is None:
            meta["missing_parent"] = span.parent_id
        event_type = KIND_TO_TYPE.get(kind, EventType.SPAN)
        if _answers(kind, meta, span, agent_name, root_agent, names):
            event_type = EventType.FINAL_ANSWER
            if out is None:
                out = answer_in(inp)
        error = _error(span)
        if kind == "AGENT":  # its start: what it was given; its end: what it gave back
            agent_spans.append((span, out, error))
            out = error = None
        data: dict[str, Any] = {
            "id": span.span_id,
            "type": event_type,
            "step_index": step,
            "agent_name": agent_name,
            "module": span.name,
            "parent_id": parent_id,
            "timestamp": span.start,
            "duration_ms": span.duration_ms,
            "input": inp,
            "output": out,
            "error": error,
            "metadata": meta,
        }
        try:
            events.append(AgentEvent.model_validate(data))
        except ValidationError as exc:
            raise from_validation_error(
                exc, source=source, record=span.span_id, prefix=span.path, lineno=span.line
            ) from None

    outcome = Outcome()
    answered: str | None = None  # the top agent, when its output is the final answer's
    if root_agent is not None:
        span, inp, out = root_agent
        goal = goal or task_of(inp)
        error = _error(span)
        final = _mark_final(events, span, names.get(span.span_id), out)
        outcome = Outcome(
            status=OutcomeStatus.FAILURE if error else OutcomeStatus.UNKNOWN,
            final_answer=out if out is not None else final,
            error=ErrorInfo.model_validate(error) if error else None,
        )
        if out is not None and any(
            e.type is EventType.FINAL_ANSWER and _same(e.output, out) for e in events
        ):
            answered = span.span_id
    events = _with_agent_ends(events, agent_spans, names, answered)
    if goal is None:  # (no agent span gave its task: the first model call's question)
        asked = (task_of(e.input) for e in events if e.type in _MODEL_CALLS)
        goal = next((text for text in asked if text), None)
    starts = [s.start for s in spans if s.start]
    ends = [
        s.start + timedelta(milliseconds=s.duration_ms)
        for s in spans
        if s.start and s.duration_ms is not None
    ]
    return AgentTrajectory(
        id=trajectory_id,
        goal=goal,
        framework=framework or _framework(scopes),
        agents=list(agents.values()),
        events=events,
        outcome=outcome,
        reference_answer=reference_answer,
        metadata=dict(metadata or {}),
        started_at=min(starts) if starts else None,
        ended_at=max(ends) if ends else None,
    )


def _with_agent_ends(
    events: list[AgentEvent],
    agent_spans: Sequence[tuple[Span, Any, dict[str, Any] | None]],
    names: Mapping[str, str | None],
    answered: str | None,
) -> list[AgentEvent]:
    """``events`` with each agent span's end: an AGENT_END (as a LangGraph node's)
    with the agent's output and error, right after the last event under its start
    and at that event's step; none where the agent gave nothing back, or only the
    run's answer, which its FINAL_ANSWER event already holds (``answered``)."""
    parents = {e.id: e.parent_id for e in events}
    last: dict[str, int] = {}  # agent span id -> position of the last event under it
    wanted = {span.span_id for span, _, _ in agent_spans}
    for i, event in enumerate(events):
        at: str | None = event.id
        for _ in range(len(events)):  # (parent links have no cycle: checked above)
            if at is None:
                break
            if at in wanted:
                last[at] = i
            at = parents.get(at)
    after: dict[int, list[AgentEvent]] = {}
    for span, out, error in reversed(agent_spans):  # (an inner agent ends first)
        if span.span_id == answered:
            out = None
        if (out is None and error is None) or span.span_id not in last:
            continue
        position = last[span.span_id]
        end = span.start + timedelta(milliseconds=span.duration_ms) if span.start else None
        after.setdefault(position, []).append(
            AgentEvent(
                id=f"{span.span_id}/end",
                type=EventType.AGENT_END,
                step_index=events[position].step_index,
                agent_name=names.get(span.span_id),
                module=span.name,
                parent_id=span.span_id,
                timestamp=end if span.duration_ms is not None else None,
                output=out,
                error=ErrorInfo.model_validate(error) if error else None,
                metadata={"from_span": span.span_id},
            )
        )
    if not after:
        return events
    return [x for i, event in enumerate(events) for x in (event, *after.get(i, ()))]


def _same(said: Any, answer: Any) -> bool:
    """Whether a final answer says the agent's output (``20`` is the text ``"20"``)."""
    if isinstance(said, str) or isinstance(answer, str):
        return str(said).strip() == str(answer).strip()
    return bool(said == answer)


def answer_in(arguments: Any) -> Any:
    """The answer a ``final_answer`` tool was called with: ``answer`` (in ``kwargs``
    or on its own) or the first positional argument, as smolagents logs them."""
    if isinstance(arguments, Mapping):
        kwargs = arguments.get("kwargs")
        if isinstance(kwargs, Mapping) and "answer" in kwargs:
            return kwargs["answer"]
        if "answer" in arguments:
            return arguments["answer"]
        args = arguments.get("args")
        if isinstance(args, list) and args:
            return args[0]
    return arguments


def _answers(
    kind: str,
    meta: Mapping[str, Any],
    span: Span,
    agent_name: str | None,
    root_agent: tuple[Span, Any, Any] | None,
    names: Mapping[str, str | None],
) -> bool:
    """Whether ``span`` is the top agent's (not a managed agent's) successful call
    of its ``final_answer`` tool."""
    if kind != "TOOL" or meta.get("tool_name") != "final_answer" or span.status == "error":
        return False
    top = names.get(root_agent[0].span_id) if root_agent is not None else None
    return agent_name == top


def _mark_final(events: list[AgentEvent], root: Span, agent: str | None, answer: Any) -> Any:
    """The final answer's output. With no ``final_answer`` tool call, the top agent's
    last LLM call, when its text is the agent's output, becomes the FINAL_ANSWER;
    else an agent output in text is added as a FINAL_ANSWER event of its own."""
    finals = [e for e in events if e.type is EventType.FINAL_ANSWER]
    if finals:
        return finals[-1].output
    if not isinstance(answer, str) or not answer.strip():
        return None
    last_llm = next(
        (
            i
            for i in range(len(events) - 1, -1, -1)
            if events[i].type is EventType.LLM_CALL and events[i].agent_name == agent
        ),
        None,
    )
    if last_llm is not None:
        said = events[last_llm].output
        if isinstance(said, str) and said.strip() == answer.strip():
            events[last_llm] = events[last_llm].model_copy(update={"type": EventType.FINAL_ANSWER})
            return answer
    stamps = [e.timestamp for e in events if e.timestamp is not None]
    if root.start is not None and root.duration_ms is not None:
        stamps.append(root.start + timedelta(milliseconds=root.duration_ms))
    events.append(
        AgentEvent(
            id=f"{root.span_id}/final_answer",
            type=EventType.FINAL_ANSWER,
            step_index=len(events),
            agent_name=agent,
            module=root.name,
            parent_id=root.span_id,
            timestamp=max(stamps) if stamps else None,
            output=answer,
            metadata={"from_span": root.span_id, "synthesized": "the agent span's output"},
        )
    )
    return answer


def _check_span_size(span: Span, source: str, limit: int) -> None:
    """Refuse a span whose attributes together exceed the per-event limit."""
    total = 0
    largest = ("", 0)
    for key, value in span.attributes.items():
        size = json_size(value, limit)
        total += size
        if size > largest[1]:
            largest = (key, size)
    for extra in (span.fallback_input, span.fallback_output):
        total += json_size(extra, limit)
    if total > limit:
        where = f"{span.path}.{span.attributes_path}" if span.path else span.attributes_path
        raise InputError(
            f"span of {total:,} bytes is over the per-event limit of {limit:,} bytes "
            f"(largest value: '{largest[0]}', {largest[1]:,} bytes; raise "
            f"{MAX_EVENT_BYTES_ENV} to import it)",
            source=source,
            record=span.span_id,
            field=f"{where}.{largest[0]}" if largest[0] else where,
            lineno=span.line,
        )
