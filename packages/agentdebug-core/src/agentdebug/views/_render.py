"""One step as text, at each granularity.

FULL keeps every byte of evidence a step holds (cut only when asked, head and tail
kept, the cut announced); MEDIUM says what the step meant to do, did, and changed;
COARSE is one line to follow the run's progress by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdebug.detect.signals import error_text, handoff_target
from agentdebug.schema import AgentEvent, ErrorInfo, EventType
from agentdebug.text import compact_json, flatten, shorten
from agentdebug.views import _extract as ex
from agentdebug.views._steps import Granularity, Step, is_message_list

MARK = "… [{n:,} characters omitted] …"
COARSE_WIDTH = 160
_EMPTY: tuple[Any, ...] = (None, "", [], {})


# -- cutting ----------------------------------------------------------------------------


def cut_middle(text: str, limit: int) -> tuple[str, int]:
    """``text`` in about ``limit`` characters, head and tail kept around a marker that
    says how much was cut; returns the text and the number of characters omitted."""
    if len(text) <= limit:
        return text, 0
    keep = max(0, limit - len(MARK.format(n=len(text))) - 2)
    head = (keep * 3 + 4) // 5
    tail = keep - head
    omitted = len(text) - keep
    cut = text[:head] + "\n" + MARK.format(n=omitted) + "\n" + (text[-tail:] if tail else "")
    return cut, omitted


def allot(sizes: list[int], total: int) -> list[int]:
    """Share ``total`` characters among fields: short ones stay whole, long ones get an
    equal cap (water-filling), so a cut falls on what is long."""
    if sum(sizes) <= total:
        return list(sizes)
    remaining = max(0, total)
    cap = 0
    ordered = sorted(sizes)
    for i, size in enumerate(ordered):
        share = remaining // (len(ordered) - i)
        if size > share:
            cap = share
            break
        remaining -= size
    return [min(size, cap) for size in sizes]


# -- readable payloads ------------------------------------------------------------------


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and any(k in value for k in ("role", "content", "tool_calls"))


def _arguments(value: Any) -> Any:
    """Tool arguments without the wrapper some tracers add (``args``/``kwargs``)."""
    wrapped = isinstance(value, Mapping) and ("args" in value or "kwargs" in value)
    if not wrapped or not set(value) <= {"args", "kwargs", "sanitize_inputs_outputs"}:
        return value
    args = list(value.get("args") or [])
    kwargs = dict(value.get("kwargs") or {})
    if not kwargs:
        return args[0] if len(args) == 1 else args
    return {"args": args, **kwargs} if args else kwargs


def arguments_text(value: Any) -> str:
    value = _arguments(value)
    return value if isinstance(value, str) else compact_json(value)


def tool_calls(message: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(name, arguments) of each tool call a message made (OpenAI's ``function``
    with ``arguments``, LangChain's ``name`` with ``args``)."""
    calls = message.get("tool_calls")
    out: list[tuple[Any, Any]] = []
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping):
            function = call.get("function")
            source = function if isinstance(function, Mapping) else call
            out.append((source.get("name"), source.get("arguments", source.get("args"))))
    return out


def _calls(message: Mapping[str, Any]) -> list[str]:
    return [f"{name}({arguments_text(args)})" for name, args in tool_calls(message)]


def _message_body(message: Mapping[str, Any]) -> str:
    lines = [flatten(message.get("content"))] if message.get("content") not in _EMPTY else []
    lines += [f"→ call {call}" for call in _calls(message)]
    return "\n".join(lines)


def _message_text(message: Mapping[str, Any]) -> str:
    role = str(message.get("role") or "message")
    name = message.get("name")
    head = f"[{role} {name}]" if name else f"[{role}]"
    body = _message_body(message)
    return f"{head} {body}" if body else head


def readable(value: Any) -> str:
    """A payload as text a model reads easily: strings as they are, messages as their
    content, objects as ``key: value`` lines, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if _is_message(value):
        return _message_body(value)
    if is_message_list(value):
        return "\n".join(_message_text(m) for m in value)
    if isinstance(value, Mapping) and value:
        lines = []
        for key, item in value.items():
            if item in _EMPTY:
                continue
            text = item if isinstance(item, str) else compact_json(item)
            lines.append(f"{key}: {text}")
        return "\n".join(lines)
    return compact_json(value)


def main_text(event: AgentEvent) -> str:
    """The text a step is about: its output, else its input."""
    for value in (event.output, event.input):
        if value in _EMPTY:
            continue
        if event.type is EventType.TOOL_CALL and value is event.input:
            return arguments_text(value)
        if isinstance(value, Mapping) and isinstance(value.get("task"), str):
            return str(value["task"])
        return readable(value)
    return ""


def error_line(error: ErrorInfo, width: int) -> str:
    return shorten(error_text(error), width)


# -- labels -----------------------------------------------------------------------------


def event_label(event: AgentEvent) -> str:
    """The event type, with what it acted on: ``handoff → WebSurfer``, ``tool.call
    web_search``, ``span Step 2``."""
    meta = event.metadata
    if event.type is EventType.HANDOFF and (target := handoff_target(event)):
        return f"handoff → {target}"
    if event.type in (EventType.TOOL_CALL, EventType.TOOL_RESULT) and meta.get("tool_name"):
        return f"{event.type.value} {meta['tool_name']}"
    if event.type is EventType.SPAN and event.module:
        return f"span {event.module}"
    return event.type.value


def _step_label(step: Step) -> str:
    return "+".join(dict.fromkeys(event_label(e) for e in step.events)) or "empty"


def _lead(step: Step) -> str:
    return f"step {step.index} · {step.agent}" if step.agent else f"step {step.index}"


def full_header(step: Step) -> str:
    if len(step.events) == 1:
        event = step.events[0]
        return f"[{_lead(step)} · {event_label(event)} · id {event.id}]"
    listed = ", ".join(f"{event_label(e)} id {e.id}" for e in step.events)
    return f"[{_lead(step)} · {len(step.events)} events: {listed}]"


# -- FULL -------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _llm_input(step: Step, event: AgentEvent) -> tuple[str, str]:
    messages: list[Any] = event.input
    known = step.seen_inputs.get(event.id)
    if known is not None:
        shared, previous = known
        new = messages[shared:]
        note = (
            f"; {_plural(shared, 'earlier message')} omitted, the same as the input of "
            f"the previous llm.call of this agent at step {previous}"
            if shared
            else ""
        )
    elif len(messages) > 2:
        new = messages[-2:]
        note = f"; {_plural(len(messages) - 2, 'earlier message')} not shown"
    else:
        new, note = messages, ""
    label = f"input ({_plural(len(new), 'new message')}{note}):"
    return label, "\n".join(_message_text(m) for m in new)


def _fields(step: Step, event: AgentEvent) -> list[tuple[str | None, str]]:
    fields: list[tuple[str | None, str]] = []
    if event.type is EventType.LLM_CALL and is_message_list(event.input):
        fields.append(_llm_input(step, event))
    elif event.input not in _EMPTY:
        body = arguments_text(event.input) if event.type is EventType.TOOL_CALL else None
        fields.append(("input:", body if body is not None else readable(event.input)))
    if event.output not in _EMPTY:
        fields.append(("output:" if fields else None, readable(event.output)))
    if event.error is not None:
        error = event.error
        body = error_text(error)
        if error.traceback:
            body += "\ntraceback:\n" + error.traceback
        fields.append(("ERROR:", body))
    if not fields:
        fields.append((None, "(no input or output)"))
    return fields


def body_size(step: Step) -> int:
    """Characters of all the bodies of the step's FULL rendering (what ``max_chars`` cuts)."""
    return sum(len(body) for event in step.events for _, body in _fields(step, event))


def render_full(step: Step, max_chars: int | None = None) -> tuple[str, int]:
    """The whole step; with ``max_chars``, its bodies together cut to about that many
    characters (headers and labels are kept). Returns the text and the characters cut."""
    per_event = [(event, _fields(step, event)) for event in step.events]
    bodies = [body for _, fields in per_event for _, body in fields]
    limits = allot([len(b) for b in bodies], max_chars) if max_chars is not None else None
    lines = [full_header(step)]
    omitted = 0
    k = 0
    for event, fields in per_event:
        if len(step.events) > 1:
            lines.append(f"({event_label(event)} · id {event.id})")
        for label, body in fields:
            if limits is not None:
                body, cut = cut_middle(body, limits[k])
                omitted += cut
            k += 1
            if label:
                lines.append(label)
            if body:
                lines.append(body)
    return "\n".join(lines), omitted


# -- MEDIUM -----------------------------------------------------------------------------


def _digest(event: AgentEvent) -> tuple[str, str, str]:
    """(intent, action, result) of one event."""
    text = ex.scanned(main_text(event))
    clean = ex.prose(text)
    meta = event.metadata
    kind = event.type
    intent = action = result = ""
    if kind is EventType.TOOL_CALL:
        name = meta.get("tool_name") or event.module or "tool"
        action = shorten(f"{name}({arguments_text(event.input)})", 150)
        result = ex.gist(ex.scanned(readable(event.output))) if event.output not in _EMPTY else ""
    elif kind is EventType.TOOL_RESULT:
        action = "tool result"
        if meta.get("exit_code") is not None:
            action += f" (exit code {meta['exit_code']})"
        result = ex.gist(text)
    elif kind is EventType.AGENT_START:
        task = event.input.get("task") if isinstance(event.input, Mapping) else event.input
        if task not in _EMPTY:  # (a start with no task, as LangGraph records a node's: no intent)
            task_text = task if isinstance(task, str) else readable(task)
            intent = ex.first_sentences(ex.prose(ex.scanned(task_text)))
        action = f"runs agent {event.agent_name or event.module or ''}".strip()
        if event.output not in _EMPTY:
            result = ex.gist(ex.scanned(readable(event.output)))
    elif kind is EventType.SPAN:
        action = f"span {event.module}" if event.module else "span"
        result = ex.gist(text)
    else:
        output = event.output
        calls = _calls(output) if isinstance(output, Mapping) else []
        structured = None if calls else ex.json_gist(text)
        intent = structured or ex.first_sentences(clean)
        code = ex.code_lines(text)
        if kind is EventType.HANDOFF:
            action = f"hands off to {meta.get('target') or 'another agent'}"
        elif calls:
            action = "calls " + "; ".join(calls)
        elif code:
            action = f"code: {code[0]}"
        elif kind is EventType.FINAL_ANSWER:
            action = "final answer"
            if meta.get("final_answer"):
                result = f"final answer: {meta['final_answer']}"
        else:
            action = {EventType.LLM_CALL: "model reply", EventType.USER_INPUT: "user input"}.get(
                kind, kind.value
            )
        if not result and not structured and kind is not EventType.USER_INPUT:
            result = ex.conclusion(clean)
    if event.error is not None:
        result = "ERROR: " + error_line(event.error, 140)
    said = result.rstrip("…") in intent or (intent and intent.rstrip("…") in result)
    if result and not result.startswith("ERROR") and said:
        result = ""  # the intent already says it
    return intent, shorten(action, 150), shorten(result, 150)


def render_medium(step: Step) -> str:
    digests = [_digest(e) for e in step.events]
    intent = next((d[0] for d in digests if d[0]), "")
    action = "; ".join(dict.fromkeys(d[1] for d in digests if d[1]))
    errors = [d[2] for d in digests if d[2].startswith("ERROR")]
    results = [d[2] for d in digests if d[2]]
    result = errors[0] if errors else (results[-1] if results else "")
    ids = ", ".join(step.event_ids)
    lines = [f"~ {_lead(step)} · {_step_label(step)} · id {ids}"]
    for name, value in (("intent", intent), ("action", action), ("result", result)):
        if value:
            lines.append(f"  {name}: {shorten(value, 200)}")
    return "\n".join(lines)


# -- COARSE -----------------------------------------------------------------------------


def _open_commitment(step: Step) -> str:
    for event in reversed(step.events):
        if event.type is EventType.USER_INPUT:
            continue
        raw = ex.denoise(ex.scanned(main_text(event), ex.LINE_HEAD, ex.LINE_TAIL))
        if event.type is EventType.HANDOFF:
            found = ex.first_sentences(ex.prose(raw), 80)
        elif event.type is EventType.PLAN:
            found = ex.plan_item(raw)
        else:
            found = "" if ex.json_gist(raw) else ex.commitment(ex.prose(raw))
        if found:
            return found
    return ""


def _entity_text(step: Step) -> tuple[str, str]:
    """The text to take entities from, and the digest of any JSON object the step
    states (an orchestrator's ledger), which a coarse line shows instead."""
    parts: list[str] = []
    structured = ""
    for event in step.events:
        if event.type is EventType.TOOL_CALL and event.input not in _EMPTY:
            parts.append(arguments_text(event.input))
        text = ex.scanned(main_text(event), ex.LINE_HEAD, ex.LINE_TAIL)
        structured = structured or (ex.json_gist(text, COARSE_WIDTH) or "")
        parts.append(text)
    return ex.denoise("\n".join(parts)), structured


def render_coarse(step: Step, width: int = COARSE_WIDTH) -> str:
    """One line, about ``width`` characters; a failed step's line carries its error
    message (up to 100 characters more), so errors stay visible in every view."""
    error = next((e.error for e in step.events if e.error is not None), None)
    status = f"ERROR {error_line(error, 100)}" if error is not None else "ok"
    prefix = f"- {_lead(step)} · {_step_label(step)} · "
    room = width - len(prefix) - 2  # the error message does not eat the room
    prefix += status
    commit = _open_commitment(step)
    tail = f"next: {shorten(commit, max(20, min(70, room // 2)))}" if commit and room > 30 else ""
    text, structured = _entity_text(step)
    parts = [prefix]
    if structured:
        parts.append(shorten(structured, max(20, room - len(tail) - 6)))
    else:
        found = ex.entities(text, room - len(tail) - 6)
        if found:
            parts.append(", ".join(found))
    if tail:
        parts.append(tail)
    return " · ".join(parts)


def render_step(step: Step, granularity: Granularity, *, max_chars: int | None = None) -> str:
    """``step`` as text at ``granularity``.

    FULL: a header line ``[step 12 · WebSurfer · message · id e12]`` and every
    event's content (only the new messages of an LLM call's input); ``max_chars``
    cuts long bodies, keeping head and tail. MEDIUM: intent, action, result lines.
    COARSE: one line with status, key entities and any open commitment.
    """
    granularity = Granularity(granularity)  # "full" works too
    if granularity is Granularity.FULL:
        return render_full(step, max_chars)[0]
    text = render_medium(step) if granularity is Granularity.MEDIUM else render_coarse(step)
    if max_chars is not None:
        text = cut_middle(text, max_chars)[0]
    return text
