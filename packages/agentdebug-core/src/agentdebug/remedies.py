"""The fix a report gives: the strategy's own (DeepDebug and the model strategies
write one), else the blamed failure mode's remedy, addressed to the agent and step,
made concrete with what the run holds.

A mode's remedy is general ("Call the tool again with arguments that match its
schema exactly."). Given as a retry directive, it tells the agent nothing it can
act on, so when the blamed step is a tool call that failed, the fix says which call
and how it failed; when the call named a tool that does not exist, it names the
tools that do. A model strategy blames a step's decision (the model's reply, the
node's start), not the call it asked for: a call of that agent at that step that
failed is named all the same (before, a model that agreed with the free tier gave a
fix that no longer said which call failed).
"""

from __future__ import annotations

import re

import orjson

from agentdebug.detect.cut_answers import cut_reason
from agentdebug.detect.recovery import NO_SUCH_TOOL
from agentdebug.detect.signals import error_text, failure_of, tool_name
from agentdebug.plugins import Registry
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Fix, Hypothesis
from agentdebug.text import shorten

CALL_CHARS = 120  # of the failing call's arguments, in the fix
ERROR_CHARS = 200  # of its error
MORE_CALLS = 2  # other failed calls of the blamed step named in the fix
# a repeated failed call's remedy, where the mode's would say "retry"
CHANGE_CALL = (
    "Do not repeat the call unchanged: change it (another tool, or the arguments the "
    "error asks for)."
)


def fix_of(
    root: Hypothesis | None, reg: Registry, trajectory: AgentTrajectory, who: str | None
) -> Fix | None:
    """The strategy's own fix when it wrote one, else the remedy of the root cause's
    failure mode, addressed to ``who`` (its agent, or what stands for it) and step."""
    if root is None:
        return None
    rationale = shorten(root.rationale, 300) if root.rationale else None
    own = root.metadata.get("fix")
    if isinstance(own, str) and own.strip():
        return Fix(
            directive=own.strip(),
            target_agent=root.agent_name,
            target_step=_decided_at(root),
            rationale=rationale,
        )
    if root.mode_id is None:
        return None
    mode = reg.failure_modes.get(root.mode_id)
    if mode is None:
        return None
    events = trajectory.events
    at = next((i for i, e in enumerate(events) if e.id == root.event_id), None)
    blamed = events[at] if at is not None else None  # (the root cause's own event)
    at = _call_of(events, at)  # (the call it names, when it is the decision that made it)
    remedy = mode.remedy
    if root.mode_id == "action.malformed_tool_call":
        call = events[at] if at is not None else None
        remedy = _no_such_tool_remedy(trajectory, root, call) or _refused_value(root) or remedy
    if root.mode_id == "system.resource_exhaustion" and blamed and cut_reason(blamed):
        remedy = CUT_REMEDY  # (not "shrink the input": the answer, not the input, hit it)
    if (
        root.mode_id == "observation.output_misread"
        and root.rationale
        and root.strategy == "heuristic"
    ):
        # (the heuristic's: its rationale is the rule's finding, which says what was misread)
        remedy = f"{shorten(root.rationale.split('; ')[0], 200)}. {remedy}"
    failed = _failed_call(events, at)
    if failed is not None:
        said, again = failed
        if again and root.mode_id == "system.tool_error":
            remedy = CHANGE_CALL  # (not "... and retry once": the agent did, and it failed)
        remedy = f"{said}. {remedy}"
    step = _decided_at(root)
    return Fix(
        directive=f"At step {step}, {who or 'the agent'}: {remedy}",
        target_agent=root.agent_name,
        target_step=step,
        rationale=rationale,
    )


def _decided_at(root: Hypothesis) -> int | None:
    """The step a fix is for: the blamed step, or, where a model blamed a tool's
    output (a tool node's step), the decision that produced it (``decision_step``),
    since no fix reaches a tool's output and a rerun from it would redo it."""
    decided = root.metadata.get("decision_step")
    return (
        decided if isinstance(decided, int) and not isinstance(decided, bool) else root.step_index
    )


CUT_REMEDY = (
    "Raise the call's output-token limit (max_tokens, max_output_tokens), or ask for "
    "a shorter answer, or for it in parts."
)


# a step's decision, as a model strategy blames it: what asked for the step's tool calls
_DECISIONS = frozenset(
    {
        EventType.AGENT_START,
        EventType.AGENT_END,
        EventType.LLM_CALL,
        EventType.LLM_RESPONSE,
        EventType.REASONING,
        EventType.PLAN,
        EventType.MESSAGE,
    }
)


def _call_of(events: list[AgentEvent], at: int | None) -> int | None:
    """The blamed event ``events[at]``; but where it is a decision of an agent at a
    step where that agent's tool call failed, the first such call (one it asked for,
    by ``parent_id``, before the others): what the fix must name."""
    if at is None or events[at].type not in _DECISIONS:
        return at
    blamed = events[at]
    calls = [
        i
        for i, e in enumerate(events)
        if e.type is EventType.TOOL_CALL
        and e.step_index == blamed.step_index
        and e.agent_name == blamed.agent_name
    ]
    calls.sort(key=lambda i: events[i].parent_id != blamed.id)
    return next((i for i in calls if _unresolved(events, i)), at)


def _unresolved(events: list[AgentEvent], at: int) -> bool:
    """Whether the tool call ``events[at]`` failed and no later call of its agent,
    the same tool with the same arguments, got past it (a timeout a retry got past
    is no failure for a decision's fix to name)."""
    if _call_failure(events, at) is None:
        return False
    call = events[at]
    name = tool_name(call)
    return not any(
        e.type is EventType.TOOL_CALL
        and e.agent_name == call.agent_name
        and tool_name(e) == name
        and e.input == call.input
        and _call_failure(events, i) is None
        for i, e in enumerate(events[at + 1 :], start=at + 1)
    )


def _failed_call(events: list[AgentEvent], at: int | None) -> tuple[str, int] | None:
    """When the blamed event (``events[at]``) is a tool call whose result failed: the
    call and its error, as `search_fares({"date":"14/12/2026"}) failed: "..."`; with
    the other calls of its agent at that step that failed too (parallel tool calls:
    a rerun that mends only the blamed one fails on the next), and how many times the
    agent made it again, failing again (said, and returned beside the text)."""
    said = _call_failure(events, at)
    if said is None or at is None or not _unresolved(events, at):
        return None  # (no failure; or one a retry got past: not what the fix is for)
    blamed = events[at]
    own_id = blamed.metadata.get("tool_call_id")
    others: list[str] = []  # (each once: not the blamed call again, as a resume records it)
    for i, event in enumerate(events):
        if (
            i != at
            and event.type is EventType.TOOL_CALL
            and event.step_index == blamed.step_index
            and event.agent_name == blamed.agent_name
            and (own_id is None or event.metadata.get("tool_call_id") != own_id)
        ):
            other = _call_failure(events, i)
            if other is not None and other != said and other not in others:
                others.append(other)
    if others:
        more = f" (and {len(others) - MORE_CALLS} more)" if len(others) > MORE_CALLS else ""
        said += f"; at the same step, {'; '.join(others[:MORE_CALLS])}{more}"
    again = _repeats(events, at)
    if again:  # (then "retry" is what the agent did, and what failed)
        times = "once more" if again == 1 else f"{again} more times"
        said += f". The agent made the same call {times} after it failed"
    return said, again


def _repeats(events: list[AgentEvent], at: int) -> int:
    """How many times the agent of the failed tool call ``events[at]`` made it again
    later, with the same tool and arguments, and it failed again: up to the first
    that did not fail (where a retry worked, retrying is not the mistake)."""
    call = events[at]
    name, given = tool_name(call), call.input
    again = 0
    for i in range(at + 1, len(events)):
        event = events[i]
        if (
            event.type is not EventType.TOOL_CALL
            or event.agent_name != call.agent_name
            or tool_name(event) != name
            or event.input != given
        ):
            continue
        if _call_failure(events, i) is None:
            break
        again += 1
    return again


def _call_failure(events: list[AgentEvent], at: int | None) -> str | None:
    """``events[at]``, a tool call whose result failed, with its error; else None."""
    result = _result_of(events, at)
    failure = failure_of(result[1]) if result is not None else None
    if result is None or failure is None:
        return None
    call, answer = result
    error = answer.error
    said = error_text(error) if error is not None and error.type else failure[1]
    name = tool_name(call) or "the call"
    return f'{name}({_arguments(call)}) failed: "{shorten(said, ERROR_CHARS)}"'


def _result_of(events: list[AgentEvent], at: int | None) -> tuple[AgentEvent, AgentEvent] | None:
    """The tool call ``events[at]`` and its result: the result linked to it (by
    ``parent_id`` or the call's ``tool_call_id``), else the next result of the same
    tool before that tool is called again (a log that links nothing)."""
    if at is None or events[at].type is not EventType.TOOL_CALL:
        return None
    call = events[at]
    link = call.metadata.get("tool_call_id")
    for event in events:
        if event.type is EventType.TOOL_RESULT and (
            event.parent_id == call.id or (link and event.metadata.get("tool_call_id") == link)
        ):
            return call, event
    name = tool_name(call)
    for event in events[at + 1 :]:
        if tool_name(event) != name:
            continue
        if event.type is EventType.TOOL_CALL:
            return None
        if event.type is EventType.TOOL_RESULT and not event.metadata.get("tool_call_id"):
            return call, event
    return None


def _arguments(call: AgentEvent) -> str:
    value = call.input
    if value is None:
        return ""
    if isinstance(value, str):
        return shorten(value, CALL_CHARS)
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        text = str(value)
    return shorten(text, CALL_CHARS)


def _no_such_tool_remedy(
    trajectory: AgentTrajectory, root: Hypothesis, call: AgentEvent | None
) -> str | None:
    """For a call of a tool that does not exist (a name the model made up): the
    tools the agent has, by name, rather than "match its schema exactly". None when
    the root cause is not about a missing tool."""
    said = [root.rationale or "", *(e.quote or "" for e in root.evidence)]
    if not any(NO_SUCH_TOOL.search(text) for text in said):
        return None
    wrong = tool_name(call) if call is not None and call.type is EventType.TOOL_CALL else None
    known: list[str] = []
    for agent in trajectory.agents:
        if agent.name == root.agent_name or not root.agent_name:
            known += agent.tools
    if not known:  # the tools the run called and that answered
        known = [
            name
            for e in trajectory.events
            if e.type is EventType.TOOL_RESULT
            and e.error is None
            and failure_of(e) is None
            and (name := tool_name(e))
        ]
    known = [t for t in dict.fromkeys(known) if t != wrong]
    instead = f" instead of '{wrong}'" if wrong else ""
    if known:
        return (
            f"Call a tool that exists{instead}: {', '.join(known[:8])} "
            "(use its exact name and arguments)."
        )
    return f"Call a tool the agent actually has, by its exact name{instead}."


# a tool refusing an argument's value, not the call's form ("'X9' is not an order id",
# "amount must be a positive number"): the kind of value it wanted
_REFUSED_VALUE = re.compile(
    r"\bnot an? (?:valid )?((?:\w+ )?(?:id|identifier|number|integer|email(?: address)?|date|"
    r"uuid|url))\b|\bmust be (?:an? )?((?:valid |positive |non-negative )?(?:int|integer|"
    r"number|string|date|email))\b(?!\s+(?:before|after|earlier|later|than|between|within))",
    re.I,
)
# ... beside a problem of the call's form: then the form is what to fix
_FORM_TOO = re.compile(
    r"unexpected keyword argument|missing (?:\d+ )?required|unknown (?:tool|argument|parameter)|"
    r"(?:invalid|malformed) json|could not parse|extra (?:fields|inputs) not permitted",
    re.I,
)


def _refused_value(root: Hypothesis) -> str | None:
    """For a call whose form the tool took but whose value it refused: a valid value
    of that kind, from the task or a result (not "match its schema exactly", which
    it did). None for any other malformed call."""
    said = (root.rationale or "", *(e.quote or "" for e in root.evidence))
    if any(_FORM_TOO.search(text) for text in said):
        return None
    for text in said:
        found = _REFUSED_VALUE.search(text)
        if found:
            kind = found.group(1) or found.group(2)
            return (
                f"The tool refused the argument's value, not the call's form: give it a "
                f"valid {kind.lower()}, one the task or an earlier result gives, not one made up."
            )
    return None
