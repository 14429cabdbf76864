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
the run's input (a list of two to 50 texts in its payload, or an enumeration in its
text: "orders, customers and payments", "EU, US or APAC"), a tool a model called
with two of them or more (as a whole argument, any case), an item of the list that
no tool call was given and that the failure (its reason, or the reference answer)
names as a word of its own, and the first reply of that model after its last call
of the tool that called no tool (the answer that stopped). That reply is blamed.

And the same of actions (``asked_action_skipped``): "reset his password, revoke all
of his active sessions, and disable the laptop", a model that called
``reset_password`` and ``disable_device`` and said the ticket could be closed, and
the ``revoke_sessions`` tool it was offered (a graph's ``ToolNode`` records its
tools with the run) never called. In a failed run: a tool an agent of the run has,
not a read (``get_``, ``list_``, ``search_``...), never called, whose name's words
(two or more, of three letters or more) the run's input says in one sentence, not
after a "don't", "no need" or "without"; another tool called; and the model's first
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
_ITEM = r"[\w][\w.-]{1,40}"
# "orders, customers and payments", "EU, US or APAC", "a/b and c": three items or more
_ENUMERATION = re.compile(
    rf"(?<![\w.-])({_ITEM}(?:\s*,\s*{_ITEM})+\s*,?\s+(?:and|or|&)\s+{_ITEM})(?![\w-])"
)
_SPLIT = re.compile(r"\s*,\s*(?:(?:and|or|&)\s+)?|\s+(?:and|or|&)\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_NOT = re.compile(r"\b(?:don'?t|do not|no need|without|never|not|skip|except)\b")
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
    given: dict[str, set[str]] = {}  # tool -> the texts its calls were given
    every: set[str] = set()  # every text any call was given
    for i, event in enumerate(events):
        if event.type is not EventType.TOOL_CALL:
            continue
        if sum(map(len, calls.values())) >= MOST_CALLS:
            break
        name = tool_name(event) or ""
        texts = {t.casefold() for t in _texts(event.input)}
        calls.setdefault(name, []).append(i)
        given.setdefault(name, set()).update(texts)
        every |= texts
    for items in lists:
        for tool, texts in given.items():
            done = [item for item in items if item in texts]
            if len(done) < 2:
                continue
            left = [item for item in items if item not in every and has(failure, item)]
            if not left:
                continue
            stop = _stop(events, calls[tool][-1])
            if stop is not None:
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
    asked = " ".join(
        flatten(e.input, 100_000) for e in events if e.type is EventType.USER_INPUT
    ).casefold()
    sentences = [s for s in _SENTENCE.split(asked) if s.strip()]
    last = max(i for i, e in enumerate(events) if e.type is EventType.TOOL_CALL)
    for tool in dict.fromkeys(offered):
        if tool in called:
            continue
        words = [w for w in tool_words(tool) if len(w) >= 3 and w not in _PLAIN]
        if len(words) < 2 or only_reads(words):
            continue
        said = next((x for x in sentences if all(_says(x, w) for w in words)), None)
        if said is None or _NOT.search(said[: min(_at(said, w) for w in words)]):
            continue
        stop = _stop(events, last)
        if stop is not None:
            yield _skipped(stop, tool, said.strip())
            return


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
            for m in _ENUMERATION.finditer(item[:200_000]):
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
