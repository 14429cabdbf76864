"""A step's code that kept some of a collection's items and dropped the one the
failure names.

A stock sync reads the warehouse's counts (``{"TR2-44": 0, "TR2-43": 5, ...}``),
and a plain ``diff`` node keeps the SKUs to update with ``if qty and qty !=
listed``: the 0 reads as false, the sold-out SKU is not among the updates, and
the storefront goes on selling it. A patch triage keeps the hosts whose version
is below the fixed one, comparing versions as strings ("2.9.12" > "2.10.3"), and
two vulnerable hosts are left out. The run fails naming the item left out; the
steps after the selection worked faithfully on what they were given. The fault
is the selection's condition (``memory.context_loss``: what the run had, lost on
the way); without this rule the free tier guessed.

The rule keeps to what it can read for certain, in a failed run whose reason (or
reference answer) names an item: a node run that called no model (its own code
selected; its start recorded, as a graph's node runs are, not an imported
transcript's agent turn) whose update writes a collection of items (a list of names, the keys of
a mapping, or the names of a list of records: the first field whose values are
texts that differ from record to record, ``host``, ``sku``) that is a part, smaller
by at least one, of a collection an earlier step wrote or read (the run's input, a
tool's result, also as JSON text, a node's update), where an item left out is
named by the failure as a word of its own and reads as an identifier (it holds a
digit, a dash, an underscore or a dot: ``TR2-44``, ``pg-prod-01``, not ``summary``).
The first such selection is blamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "named_item_filtered_out"
LOOKBACK = 200  # the latest collections a selection is looked for in
MOST_ITEMS = 500  # items of a collection read
MOST_NAME = 60  # characters of an item's name
_DEPTH = 4  # levels of a payload looked into
_JSON_TEXT = 1_000_000  # the longest text read as JSON
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.REASONING})
_SOURCES = frozenset({EventType.TOOL_RESULT, EventType.AGENT_END, EventType.USER_INPUT})
_ID_LIKE = re.compile(r"[\d\-_.]")


def _names(items: list[Any]) -> frozenset[str] | None:
    """The names of a list's items: the items themselves, when texts; or, for records,
    the first field whose values are texts that differ from record to record."""
    items = items[:MOST_ITEMS]
    if all(isinstance(i, str) and 0 < len(i) <= MOST_NAME for i in items):
        return frozenset(items)
    if len(items) < 2 or not all(isinstance(i, dict) for i in items):
        return None
    for key in items[0]:
        values = [v for i in items if isinstance(v := i.get(key), str) and 0 < len(v) <= MOST_NAME]
        if len(values) == len(items) and len(set(values)) == len(values):
            return frozenset(values)
    return None


def _collections(value: Any, depth: int = 0, keys: bool = True) -> Iterator[frozenset[str]]:
    """Every collection of named items in a payload: lists, mappings' keys, nested
    (with ``keys`` False, not the payload's own keys: a state update's channels)."""
    if depth > _DEPTH:
        return
    if isinstance(value, str):
        if depth == 0 and value[:1] in ("{", "[") and len(value) <= _JSON_TEXT:
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                return
        else:
            return
    if isinstance(value, dict):
        keyed = [k for k in list(value)[:MOST_ITEMS] if isinstance(k, str)]
        if (depth or keys) and keyed and all(len(k) <= MOST_NAME for k in keyed):
            yield frozenset(keyed)
        for item in list(value.values())[:MOST_ITEMS]:
            yield from _collections(item, depth + 1)
    elif isinstance(value, list) and value:
        listed = _names(value)
        if listed:
            yield listed
        for item in value[:MOST_ITEMS]:
            if isinstance(item, (dict, list)):
                yield from _collections(item, depth + 1)


def _named_by(reason: str, name: str) -> bool:
    return bool(_ID_LIKE.search(name)) and bool(
        re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", reason)
    )


def rule_named_item_filtered_out(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's code selection that dropped the item the failure names."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}".lower()
    if not _ID_LIKE.search(reason):
        return
    events = run.events
    # node runs (an agent at a step) the run recorded the start of; those that called a model
    started = {(e.agent_name, e.step_index) for e in events if e.type is EventType.AGENT_START}
    modelled = {(e.agent_name, e.step_index) for e in events if e.type in _MODEL}
    seen: list[tuple[AgentEvent, frozenset[str]]] = []  # collections written or read so far
    for event in events:
        if event.type not in _SOURCES:
            continue
        payload = event.input if event.type is EventType.USER_INPUT else event.output
        found = list(_collections(payload, keys=event.type is EventType.TOOL_RESULT))
        if (
            event.type is EventType.AGENT_END
            and event.agent_name
            and (event.agent_name, event.step_index) in started
            and (event.agent_name, event.step_index) not in modelled
        ):
            for kept in found:
                for source, had in reversed(seen[-LOOKBACK:]):
                    if kept < had:
                        dropped = sorted(n for n in had - kept if _named_by(reason, n))
                        if dropped:
                            yield _finding(event, source, sorted(kept), dropped)
                            return
        seen.extend((event, names) for names in found if len(names) >= 2)


def _finding(event: AgentEvent, source: AgentEvent, kept: list[str], dropped: list[str]) -> Finding:
    agent = event.agent_name
    by = source.agent_name or source.type.value
    left = ", ".join(repr(n) for n in dropped[:3])
    shown = ", ".join(repr(n) for n in kept[:3]) + (", ..." if len(kept) > 3 else "")
    field = "input" if source.type is EventType.USER_INPUT else "output"
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{agent} kept {len(kept)} of the items {by} gave at step {source.step_index} "
        f"({shown}) and left out {left}, which the failure names",
        confidence=0.55,
        evidence=[quoted(source, field, dropped[0])],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: {left} was among the items {by} gave "
                "and is not in what the step kept; check the condition that selects them "
                "(a 0 or an empty value read as false, numbers or versions compared as text)."
            ),
            "dropped": dropped,
        },
    )
