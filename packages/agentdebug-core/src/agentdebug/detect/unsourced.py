"""A tool call given an identifier that nothing in the run had given.

A support agent asked to cancel "the kettle I ordered yesterday" looks the customer
up (a profile, no orders in it) and calls ``cancel_order(order_id="ORD-20931")``:
an id in neither the request nor any tool's result. The model made it up; the tool
cancelled another customer's order, and the model said it was done. The call is
the fault (``reflection.hallucinated_fact``: a value stated as known that nothing
in the run supports), not the answer that reported it; the fix is to look the
value up, or ask for it.

The rule keeps to what it can read for certain, in a failed run: an argument of a
tool call that reads as an identifier (letters and three digits or more joined,
"ORD-20931", "INV_1042", "C4410"; or, under a key that names one, ``order_id``,
``account_number``, ``sku``, ``ref``, a value with three digits or more), first
said by a model's reply (its tool calls), with nothing before it holding it nor
its digits (the run's input, a tool's result, a node's update, that model's own
prompt); and that matters to the failure: the failure's reason or reference names
it, or the tool acts on what the id names (``cancel_order``; not a read such as
``get_order``, which finds nothing for a wrong id, nor one that makes something,
``create_ticket``, whose new id may be the caller's to choose). Keys that a caller
mints by design (an idempotency key, a request or trace id) are not read. The model
call that first said it is blamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import only_reads, tool_words
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "unsourced_argument"
MOST_CALLS = 200  # tool calls looked at in a run
_READ = 100_000  # characters of an event read
# an identifier by its form: letters, then (after a dash or underscore, or none) three
# digits or more, then more parts ("ORD-20931", "INV_1042", "C4410", "TKT-2024-0042")
_ID = re.compile(r"[A-Za-z]{1,12}[-_]?\d{3,}(?:[-_]?[A-Za-z0-9]+)*")
# a key that names an identifier ("id", "order_id", "orderId", "account_number", "sku")
_ID_KEY = re.compile(
    r"(?:^|[_-])(?:id|ids|number|no|num|ref|reference|sku|code|account|iban)$|[a-z]Id$|^sku",
    re.I,
)
# keys a caller mints by design: a new value each call, which nothing before holds
_MINTED = re.compile(r"idempoten|request[_-]?id|trace|span|nonce|correlation|session", re.I)
_MAKES = frozenset({"create", "add", "new", "insert", "register", "generate", "open", "make"})
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
_DIGITS = re.compile(r"\d{3,}")


def _ids(args: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) of a call's arguments that read as identifiers."""
    if isinstance(args, dict):
        for k, v in args.items():
            yield from _ids(v, str(k))
    elif isinstance(args, (list, tuple)):
        for item in args[:50]:
            yield from _ids(item, key)
    elif isinstance(args, (str, int)) and not isinstance(args, bool) and not _MINTED.search(key):
        value = str(args).strip()
        if len(value) > 40:
            return
        if _ID.fullmatch(value) or (_ID_KEY.search(key) and _DIGITS.search(value)):
            yield key, value


def _holds(text: str, value: str) -> bool:
    """Whether ``text`` holds the value, or its digits ("20931" for "ORD-20931")."""
    if value.lower() in text.lower():
        return True
    return any(re.search(rf"(?<!\d){digits}(?!\d)", text) for digits in _DIGITS.findall(value))


def rule_unsourced_argument(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's tool call given an identifier that a model made up."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = run.events
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    calls = [e for e in events if e.type is EventType.TOOL_CALL][:MOST_CALLS]
    wanted: list[tuple[AgentEvent, str, str]] = []  # (call, key, value)
    for call in calls:
        tool = tool_name(call) or ""
        words = tool_words(tool)
        acts = bool(words) and not only_reads(words) and not _MAKES & set(words)
        for key, value in _ids(call.input):
            if acts or _holds(failure, value):
                wanted.append((call, key, value))
    if not wanted:
        return
    texts = [(flatten(e.input, _READ), flatten(e.output, _READ)) for e in events]
    for call, key, value in wanted:  # (the earliest call's: a made-up id explains what follows)
        first = _first_said(events, texts, value)
        if first is not None:
            yield _finding(first, call, key, value)
            return


def _first_said(
    events: list[AgentEvent], texts: list[tuple[str, str]], value: str
) -> AgentEvent | None:
    """The model call whose reply first said ``value`` with nothing before it (nor its
    own prompt) holding it; None when something gave it, or no model said it first."""
    for event, (given, said) in zip(events, texts, strict=True):
        if _holds(given, value):
            return None  # (given: by the user, a tool's call or result, a prompt)
        if _holds(said, value):
            return event if event.type in _MODEL and event.agent_name else None
    return None


def _finding(model: AgentEvent, call: AgentEvent, key: str, value: str) -> Finding:
    agent = model.agent_name
    tool = tool_name(call) or "a tool"
    return rule_finding(
        RULE,
        "reflection.hallucinated_fact",
        model,
        f"{agent} called {tool} with {key}={value!r}, which nothing in the run had given "
        "(not the request, nor any tool's result)",
        confidence=0.6,
        evidence=[quoted(call, "input", value)],
        metadata={
            "fix": (
                f"At step {model.step_index}, {agent}: {value!r} appears nowhere before "
                f"this call; find the {key} with a tool that lists them (or ask the user) "
                f"and call {tool} with the value it gives, not an assumed one."
            )
        },
    )
