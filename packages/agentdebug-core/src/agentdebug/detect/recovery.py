"""Tool errors an agent got past itself (:func:`recovered_by_the_agent`): the rule
pack reports them as information, and no premature-success finding rests on them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from agentdebug.detect.invented import leaves
from agentdebug.detect.signals import SUB_RUN, tool_name
from agentdebug.schema import AgentEvent, EventType
from agentdebug.text import flatten

NO_SUCH_TOOL = re.compile(
    r"unknown tool|not a valid tool|tool .{0,40} (?:does not exist|not found)", re.I
)
_TRANSIENT = frozenset({"system.timeout", "system.rate_limited", "system.service_unavailable"})
# an error that refuses a value for its form ("Invalid isoformat string", "cannot parse",
# "invalid literal for int()", "not a valid date"), not one that found no such thing
# ("Unknown city 'Springfeld'", "Invalid account 'ACC-1042'": the substitute the agent
# asked for next may be the mistake)
_REFUSES = re.compile(
    r"pars(?:e|ing|able)\b|\bformat|isoformat|\bconvert|\bliteral\b|\bsyntax|malformed|"
    r"\bdecod|not (?:a )?(?:valid|recogni[sz]ed) (?:date|time|datetime|timestamp|duration|"
    r"number|integer|int|float|decimal|email|url|uri|uuid|json|boolean|iso)|invalid (?:date|"
    r"time|datetime|timestamp|duration|number|integer|int|float|decimal|email|url|uri|uuid|"
    r"json|boolean|iso|value for)",
    re.I,
)
_QUOTES = ("'{}'", '"{}"', "‘{}’", "“{}”", "`{}`")

# (the failed result, a later result, the calls by id) -> whether the later one fixed it
_Fits = Callable[[AgentEvent, AgentEvent, Mapping[str, AgentEvent]], bool]


def recovered_by_the_agent(
    events: Sequence[AgentEvent],
    failures: Mapping[str, tuple[str, str]],
    retried: Mapping[str, AgentEvent],
) -> dict[str, AgentEvent]:
    """Failed tool calls the agent itself got past, where getting past them is the
    fix (failure id -> the later result that did): a call whose arguments were
    malformed, after which the agent's later call of the same tool succeeded (a
    ReAct agent that read the validation error and corrected them), or, for a tool
    that does not exist, its later call of any tool (the name corrected); an error
    of no known kind that refuses a value of the call's own arguments, quoting it
    ("Invalid isoformat string: 'next Tuesday'"), after which the agent's later call
    of the same tool without that value succeeded; an outage
    or a rate limit, after which the very same call succeeded (a retry); a sub-run
    that failed, after which a sub-run of the same agent succeeded (the sub-agent
    called again); a sub-agent's error its caller caught (:func:`_caught_by_caller`).

    A call that failed on what it asked for (a file, a city not found) is not
    resolved by a call that asked for something else: the substitute may be the
    mistake (the wrong quarter's report read instead), so it stays a candidate."""
    position = {e.id: i for i, e in enumerate(events)}
    calls = {e.id: e for e in events if e.type is EventType.TOOL_CALL}
    for result in events:  # a result filed under no call: the agent's call of it before
        if result.type is EventType.TOOL_RESULT and result.parent_id not in calls:
            call = _call_before(events[: position[result.id]], result)
            if call is not None:
                calls[f"before:{result.id}"] = call
    out: dict[str, AgentEvent] = {}
    for event_id, (mode, quote) in failures.items():
        failed = events[position[event_id]]
        caught = _caught_by_caller(events[position[event_id] + 1 :], failed, failures)
        if caught is not None:
            out[event_id] = caught
            continue
        if failed.metadata.get(SUB_RUN) and failed.agent_name is not None:
            again = _sub_run_again(events[position[event_id] + 1 :], failed, failures)
            if again is not None:
                out[event_id] = again
            continue
        name = tool_name(failed) if failed.type is EventType.TOOL_RESULT else None
        if not name or failed.agent_name is None or event_id in retried:
            continue
        fits: _Fits
        if mode == "action.malformed_tool_call":
            fits = _any_tool if NO_SUCH_TOOL.search(quote) else _same_tool
        elif mode in _TRANSIENT:
            fits = _same_call
        elif mode == "system.tool_error" and _refused_own_value(failed, quote, calls):
            fits = _corrected_call
        else:
            continue
        for later in events[position[event_id] + 1 :]:
            if (
                later.type is EventType.TOOL_RESULT
                and later.id not in failures
                and later.agent_name == failed.agent_name
                and fits(failed, later, calls)
            ):
                out[event_id] = later
                break
    return out


def _caught_by_caller(
    later: Sequence[AgentEvent], failed: AgentEvent, failures: Mapping[str, tuple[str, str]]
) -> AgentEvent | None:
    """For an error that made a sub-agent raise (``wf/ask_primary``: a LangGraph
    task, a graph a node ran; its error event follows), its caller's later usual end
    (``wf``; for ``lead/researcher/search``, ``lead``) after a fallback started after
    the error did its work (a model call of the caller's own, or a sub-agent of its
    started then; not one running beside it all along): the code that called it
    caught the error and fell back, so it is no fault left standing. Not an error the sub-agent itself got past (a
    tool's, a tool node turned into a message), nor one whose fallback failed too or
    that was caught with no fallback at all, or one that only apologised (a task
    returning "Sorry, ..."): that is still the cause."""
    agent = failed.agent_name or ""
    callers = [agent[:i] for i in range(len(agent) - 1, 0, -1) if agent[i] == "/"]
    raised = failed.type is EventType.ERROR
    went_on = False  # (after the raise, a fallback did its work: the caller's own call,
    fallbacks: set[str] = set(callers)  # or a sub-agent of its started after the raise)
    for event in later if callers else ():
        name = event.agent_name or ""
        if name == agent and event.type is EventType.ERROR:
            raised = True
        elif event.type is EventType.AGENT_END and name in callers:
            usual = event.error is None and event.id not in failures
            return event if raised and usual and went_on else None
        elif raised and event.type is EventType.AGENT_START and name != agent:
            fallbacks.add(name)
        elif (
            raised
            and name in fallbacks
            and event.id not in failures
            and event.type in (EventType.LLM_RESPONSE, EventType.TOOL_RESULT, EventType.AGENT_END)
            and not _APOLOGY.match(flatten(event.output, limit=200))
        ):
            went_on = True
    return None


# what a fallback says that does no work in the failed step's place: an apology
# ("Sorry, I could not answer."), an error text, a refusal
_APOLOGY = re.compile(
    r"^\W*(?:sorry\b|apolog|unfortunately\b|error\b|I(?:'m| am) sorry|I (?:cannot|can't|"
    r"could not|couldn't|was unable|am unable))",
    re.I,
)


def _sub_run_again(
    later: Sequence[AgentEvent], failed: AgentEvent, failures: Mapping[str, tuple[str, str]]
) -> AgentEvent | None:
    """A later sub-run of the same agent that succeeded (the orchestrator called its
    sub-agent again, and it answered), if there is one (see agentdebug.capture.nesting)."""
    for event in later:
        if (
            event.agent_name == failed.agent_name
            and event.metadata.get(SUB_RUN)
            and event.id not in failures
            and event.metadata.get("sub_run_status") == "success"
        ):
            return event
    return None


def _any_tool(failed: AgentEvent, later: AgentEvent, calls: Mapping[str, AgentEvent]) -> bool:
    return True


def _same_tool(failed: AgentEvent, later: AgentEvent, calls: Mapping[str, AgentEvent]) -> bool:
    return tool_name(later) == tool_name(failed)


def _same_call(failed: AgentEvent, later: AgentEvent, calls: Mapping[str, AgentEvent]) -> bool:
    """The same tool with the same arguments (the results' parent calls compared)."""
    if not _same_tool(failed, later, calls):
        return False
    before, again = _call_of(failed, calls), _call_of(later, calls)
    return before is not None and again is not None and before.input == again.input


def _call_of(result: AgentEvent, calls: Mapping[str, AgentEvent]) -> AgentEvent | None:
    return calls.get(result.parent_id or "") or calls.get(f"before:{result.id}")


def _quoted(text: str, values: set[str]) -> set[str]:
    """Those of ``values`` that ``text`` quotes ('x', "x", ‘x’, “x”, `x`)."""
    return {v for v in values if any(q.format(v) in text for q in _QUOTES)}


def _own_values(call: AgentEvent) -> set[str]:
    return {v for v in leaves(call.input) if 2 <= len(v) <= 200}


def _refused_own_value(failed: AgentEvent, quote: str, calls: Mapping[str, AgentEvent]) -> bool:
    """A tool's error, of no known kind, that refuses a value of its call's own
    arguments for its form, quoting it ("Invalid isoformat string: 'next
    Tuesday'", "can't parse 'tmrw'"): the argument's fault, as a validation error
    is, which the agent's later call without that value gets past."""
    call = _call_of(failed, calls)
    if call is None or not _REFUSES.search(quote):
        return False
    return bool(_quoted(quote, _own_values(call)))


def _corrected_call(failed: AgentEvent, later: AgentEvent, calls: Mapping[str, AgentEvent]) -> bool:
    """The same tool, called without the value its error refused."""
    if not _same_tool(failed, later, calls):
        return False
    before, again = _call_of(failed, calls), _call_of(later, calls)
    if before is None or again is None:
        return False
    said = failed.error.message if failed.error else flatten(failed.output)
    refused = _quoted(said, _own_values(before))
    return bool(refused) and not refused & set(leaves(again.input))


def _call_before(earlier: Sequence[AgentEvent], result: AgentEvent) -> AgentEvent | None:
    """The latest call of ``result``'s tool by its agent before it (a log that
    files results under no call)."""
    name = tool_name(result)
    for event in reversed(earlier):
        if (
            event.type is EventType.TOOL_CALL
            and event.agent_name == result.agent_name
            and tool_name(event) == name
        ):
            return event
    return None
