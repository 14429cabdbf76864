"""A model that answered after acting on some of the items the request listed, and
not on the one the failure names.

"Before we publish revenue-daily, run the DQ suite on orders, customers and
payments": the agent runs ``run_dq_suite`` on customers and on payments, says "all
checks passed, cleared to publish", and the dashboard goes out with 1,212 orders
that have no customer. The failure ("finance found 1,212 orders with no
customer_id; the sign-off only lists customers, payments") shows after the run; the
answer that stopped is where the work was left undone
(``verification.premature_success``); without this rule the free tier guessed.

The rule keeps to what it can read for certain, in a failed run: a list of items in
the run's input (a list of two to 50 texts in its payload, or an enumeration of
three or more in its text, all to be done: "orders, customers and payments"; "EU,
US or APAC" asks for one of them; items of three characters or more), a tool a
model called with two of them or more, each as a whole argument of a call of its
own (one call given two items is no walk through the list), an item of the list
that no tool call's arguments hold (not even inside a query) and that the failure
(its reason, or the reference answer) names as a word of its own, and the first
reply of that model after its last call of the tool that called no tool (the answer
that stopped), unless that reply names the item (it said the item was left undone).
That reply is blamed.

And the same of actions (``asked_action_skipped``): "reset his password, revoke all
of his active sessions, and disable the laptop", a model that called
``reset_password`` and ``disable_device`` and said the ticket could be closed, and
the ``revoke_sessions`` tool it was offered (a graph's ``ToolNode`` records its
tools with the run) never called. In a failed run: a tool an agent of the run has,
not a read (``get_``, ``list_``, ``search_``...), never called, nor done through
another called tool of its words (``bulk_revoke``), whose name's words (two or
more, of three letters or more) one sentence of the request says (the last message
a user wrote in the run's input: not the system prompt's list of what the agent can
do, nor an earlier turn a thread resends), a sentence with no negation, condition,
question or change of mind ("if it hasn't shipped, cancel it", "can I cancel?",
"don't cancel", "I changed my mind"); another tool called; and the model's first
reply after its last call that called none. That reply is blamed, with confidence
0.45 (the failure need not name the action: "his account still has 2 live
sign-ins").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import only_reads, tool_words
from agentdebug.detect.records import has
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "asked_item_skipped"
ACTION_RULE = "asked_action_skipped"
MOST_CALLS = 500  # tool calls read
_ITEM = r"[\w][\w.-]{2,40}"
# "orders, customers and payments": three items or more, all to be done ("EU, US or
# APAC" asks for one of them); read in a window before each "and" (a pasted series of
# thousands of numbers is not walked again for each)
_ENUMERATION = re.compile(
    rf"(?<![\w.-])({_ITEM}(?:\s*,\s*{_ITEM}){{1,20}}\s*,?\s+(?:and|&)\s+{_ITEM})(?![\w-])"
)
_AND = re.compile(r"\s(?:and|&)\s")
_WINDOW = 600  # characters before an "and" read for its enumeration
_SPLIT = re.compile(r"\s*,\s*(?:(?:and|&)\s+)?|\s+(?:and|&)\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_USER = frozenset({"user", "human"})
# a sentence that does not plainly ask: a negation, a condition, a question, a change
_NOT_ASKED = re.compile(
    r"\b(?:don'?t|do not|doesn'?t|no need|without|never|not|skip|except|if|unless|whether"
    r"|in case|otherwise|instead|changed my mind|no longer|anymore|can i|could i|should i)\b"
    r"|\?"
)
# words of a tool's name that say nothing of what it does
_PLAIN = frozenset({"tool", "run", "do", "the", "for", "api", "v1", "v2", "all", "and"})


def rule_asked_item_skipped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model that answered before acting on an item the request listed."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}".casefold()
    if not failure.strip():
        return
    events = run.events
    lists = [items for e in events if e.type is EventType.USER_INPUT for items in _lists(e.input)]
    if not lists:
        return
    calls: dict[str, list[int]] = {}  # tool -> where its calls are
    given: dict[str, list[set[str]]] = {}  # tool -> the texts each of its calls was given
    said: list[str] = []  # every call's arguments as text (an item inside a query too)
    for i, event in enumerate(events):
        if event.type is not EventType.TOOL_CALL:
            continue
        if len(said) >= MOST_CALLS:
            break
        name = tool_name(event) or ""
        calls.setdefault(name, []).append(i)
        given.setdefault(name, []).append({t.casefold() for t in _texts(event.input)})
        said.append(flatten(event.input, 20_000).casefold())
    every = "\n".join(said)
    for items in lists:
        for tool, each in given.items():
            where = {i: [n for n, texts in enumerate(each) if i in texts] for i in items}
            done = [i for i in items if len(where[i]) == 1]
            if len({where[i][0] for i in done}) < 2:
                continue  # (a walk through the list: one call an item, two or more)
            left = [item for item in items if not has(every, item) and has(failure, item)]
            if not left:
                continue
            stop = _stop(events, calls[tool][-1])
            if stop is not None and not has(_said(stop), left[0]):  # (not said undone)
                yield _finding(stop, tool, items, done, left[0])
                return


def rule_asked_action_skipped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model that answered without calling a tool the request named."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    offered = [t for agent in run.agents for t in agent.tools]
    events = run.events
    called = {tool_name(e) for e in events if e.type is EventType.TOOL_CALL}
    if not offered or not called:
        return
    asked = _request(events).replace("\u2019", "'").casefold()
    sentences = [x for x in _SENTENCE.split(asked)[:200] if x.strip()]
    last = max(i for i, e in enumerate(events) if e.type is EventType.TOOL_CALL)
    used = {w for name in called for w in tool_words(name or "")} - _PLAIN
    for tool in list(dict.fromkeys(offered))[:500]:
        if tool in called:
            continue
        words = [w for w in tool_words(tool) if len(w) >= 3 and w not in _PLAIN]
        if len(words) < 2 or only_reads(words) or {w for w in words if len(w) >= 4} & used:
            continue  # (a read; or done through another tool of its words: bulk_cancel)
        said = next((x for x in sentences if all(_says(x, w) for w in words)), None)
        if said is None or _NOT_ASKED.search(said):
            continue
        stop = _stop(events, last)
        if stop is not None:
            yield _skipped(stop, tool, said.strip())
            return


def _request(events: list[AgentEvent]) -> str:
    """The run's request: the last message a user wrote in its input (not the system
    prompt's list of what the agent can do, nor an earlier turn a thread resends);
    the whole input when it holds no messages."""
    for event in reversed(events):
        if event.type is not EventType.USER_INPUT:
            continue
        payload = event.input
        messages = payload.get("messages") if isinstance(payload, dict) else payload
        if isinstance(messages, list):
            for message in reversed(messages):
                if isinstance(message, dict) and _USER & {message.get("role"), message.get("type")}:
                    return flatten(message.get("content"), 50_000)
            if any(isinstance(m, dict) and ("role" in m or "type" in m) for m in messages):
                return ""  # (messages, none a user's)
        return flatten(payload, 50_000)
    return ""


def _said(event: AgentEvent) -> str:
    return flatten(event.output, 20_000).casefold()


def _says(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` or its plural or singular as a word of its own."""
    return _at(text, word) >= 0


def _at(text: str, word: str) -> int:
    for form in (word, f"{word}s", word.removesuffix("s")):
        m = re.search(rf"(?<![a-z]){re.escape(form)}(?![a-z])", text)
        if m is not None and len(form) >= 3:
            return m.start()
    return -1


def _skipped(stop: AgentEvent, tool: str, said: str) -> Finding:
    agent = stop.agent_name or f"step {stop.step_index}"
    return rule_finding(
        ACTION_RULE,
        "verification.premature_success",
        stop,
        f"{agent} answered at step {stop.step_index} without calling {tool}, a tool it "
        f"was offered that the request asked for ({shorten(said, 160)!r})",
        confidence=0.45,
        evidence=[quoted(stop, "output", None)],
        metadata={
            "fix": (
                f"At step {stop.step_index}, {agent}: call {tool} (the request asked for it) "
                "before answering; check every action the request lists is done."
            ),
            "value": tool,
        },
    )


def _lists(payload: Any) -> Iterator[list[str]]:
    """The lists of items a payload holds: lists of two to 50 short texts, and the
    enumerations its texts write (each casefolded)."""
    stack = [payload]
    budget = 20_000
    while stack and budget > 0:
        budget -= 1
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            texts = [t.strip().casefold() for t in item if isinstance(t, str)]
            if 2 <= len(texts) == len(item) <= 50 and all(0 < len(t) <= 60 for t in texts):
                yield texts
            else:
                stack.extend(item)
        elif isinstance(item, str):
            text = item[:200_000]
            for a in list(_AND.finditer(text))[:200]:
                window = text[max(0, a.start() - _WINDOW) : a.end() + 60]
                for m in _ENUMERATION.finditer(window):
                    if not m.start() <= a.start() - max(0, a.start() - _WINDOW) < m.end():
                        continue  # (another "and"'s)
                    parts = [p.rstrip(".").casefold() for p in _SPLIT.split(m.group(1)) if p]
                    if len(parts) >= 3:
                        yield parts


def _texts(args: Any) -> Iterator[str]:
    """The short texts of a call's arguments (60 characters or fewer)."""
    stack = [args]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item[:200])
        elif isinstance(item, str) and 0 < len(item.strip()) <= 60:
            yield item.strip()


def _stop(events: list[AgentEvent], last_call: int) -> AgentEvent | None:
    """The first reply of the model that asked for the call at ``last_call``, after
    it, that called no tool."""
    call = events[last_call]
    agent = call.agent_name
    for event in events[last_call + 1 :]:
        if event.type is EventType.LLM_RESPONSE and event.agent_name == agent:
            out = event.output
            if not (isinstance(out, dict) and out.get("tool_calls")):
                return event
    return None


def _finding(stop: AgentEvent, tool: str, items: list[str], done: list[str], left: str) -> Finding:
    agent = stop.agent_name or f"step {stop.step_index}"
    listed = ", ".join(repr(i) for i in items[:10])
    return rule_finding(
        RULE,
        "verification.premature_success",
        stop,
        f"{agent} answered at step {stop.step_index} after calling {tool} for "
        f"{', '.join(repr(d) for d in done)} of the items the request listed ({listed}); "
        f"no call was given {left!r}, which the failure names",
        confidence=0.5,
        evidence=[quoted(stop, "output", None)],
        metadata={
            "fix": (
                f"At step {stop.step_index}, {agent}: call {tool} for {left!r} too (the "
                "request listed it) before answering; check every item of the request is done."
            ),
            "value": left,
        },
    )
