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
reference answer) names an item: a node run in which no model spoke (its own code
selected; its start recorded, as a graph's node runs are, not an imported
transcript's agent turn; nor a model of a subgraph or a graph run under it) whose
update writes a collection of items (a list of names, the keys of a mapping whose
values are all of one kind, or a list of records known by a field whose texts
differ from record to record, ``host``, ``sku``) that is a part, smaller by at
least one, of a collection of the same items an earlier step wrote or read in the
``LOOKBACK`` events before (the run's input, a tool's result, also as JSON text, a
node's update), where an item left out is named by the failure as a word of its own,
reading as an identifier (a letter and a digit, or a digit beside a dash, an
underscore or a dot: ``TR2-44``, ``pg-prod-01``; not ``follow-up``, not ``2``),
or, for records, as their name of two capitalised words or more, written as the
failure writes it, which says near it that something is missing ("does not flag
Northwind Logistics", a ``vendor``; not "Delta", "High", "Open"), and went nowhere
after: neither the update itself (a work queue's
``done``) nor anything after the source (a tool call, a node's update or input, a
``Send`` branch's; not the graph's final state, which holds everything) holds it.
The first such selection is blamed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.textsorted import sorted_before
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "named_item_filtered_out"
LOOKBACK = 200  # events before a selection its source is looked for in
MOST_ITEMS = 5000  # items of a collection read (a larger one is not compared)
MOST_NAME = 60  # characters of an item's name
BUDGET = 50_000  # values of one event's payload looked at
_DEPTH = 4  # levels of a payload looked into
_JSON_TEXT = 1_000_000  # the longest text read as JSON
_SOURCES = frozenset({EventType.TOOL_RESULT, EventType.AGENT_END, EventType.USER_INPUT})
# where an item dropped may have gone after its source: data a step was given or wrote
_CARRIED = frozenset({EventType.TOOL_CALL, EventType.AGENT_END, EventType.AGENT_START})
_DIGIT_JOINED = re.compile(r"\d[-_.]|[-_.]\d")
_LETTER, _DIGIT = re.compile(r"[A-Za-z]"), re.compile(r"\d")
# two capitalised words or more (each from a word's start: a long word is not tried
# from each of its letters; after an opening quote too, "'Northwind Logistics'")
_PROPER = re.compile(r"(?<![\w&.])(?<!\w['-])[A-Z][\w&'.-]*(?: [A-Z][\w&'.-]*)+")
_MISSING = re.compile(
    r"(?i)\b(?:not|never|no|missing|left out|omit\w*|without|dropped|skipped|excluded|"
    r"lacks?|absent)\b"
)


def _id_like(text: str) -> bool:
    """Whether ``text`` reads as holding an identifier: a line with a letter and a
    digit, or a digit joined to a separator ("A-12", "2.5", "x_1")."""
    if _DIGIT_JOINED.search(text):
        return True
    return any(_LETTER.search(line) and _DIGIT.search(line) for line in text.split("\n"))


# A collection: the field its items are known by (None: names themselves), its names
_Collection = tuple[str | None, frozenset[str]]


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MOST_NAME


def _records(items: list[Any]) -> Iterator[_Collection]:
    """A list of records' collections: one per field whose texts differ from record
    to record (a single record: each of its text fields)."""
    first = items[0]
    for key in first:
        values = [i.get(key) for i in items]
        if all(_name(v) for v in values) and len(set(values)) == len(values):
            yield str(key), frozenset(values)


def _collections(
    value: Any, budget: list[int], depth: int = 0, keys: bool = True
) -> Iterator[_Collection]:
    """Every collection of named items in a payload, nested (with ``keys`` False,
    not the payload's own keys: a state update's channels)."""
    budget[0] -= 1
    if depth > _DEPTH or budget[0] < 0:
        return
    if isinstance(value, str):
        text = value.lstrip()
        if depth > 1 or text[:1] not in ("{", "[") or len(text) > _JSON_TEXT:
            return
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
    if isinstance(value, dict):
        if len(value) > MOST_ITEMS:
            return
        kinds = {type(v) for v in value.values()}
        if (depth or keys) and value and len(kinds) == 1 and all(map(_name, value)):
            yield None, frozenset(value)  # (a mapping of items: all its values of one kind)
        for item in value.values():
            yield from _collections(item, budget, depth + 1)
    elif isinstance(value, list) and value and len(value) <= MOST_ITEMS:
        if all(map(_name, value)):
            yield None, frozenset(value)
        elif all(isinstance(i, dict) for i in value):
            yield from _records(value)
            for item in value:  # (their values; not their field names)
                for inner in item.values():
                    yield from _collections(inner, budget, depth + 2)
        else:
            for item in value:
                yield from _collections(item, budget, depth + 1)


def _named_by(reason: str, low: str, name: str, field: str | None) -> bool:
    """Whether the failure names the item as a word of its own: an identifier, in any
    case; or a record's name (its ``vendor``, ``owner``) of two words or more, each
    with a capital, as written ("Northwind Logistics"; not "Delta", "High", "Open"),
    where the failure says something is missing near it ("does not flag Northwind
    Logistics", "X was left out")."""
    if _id_like(name):
        return name.lower() in low and bool(_word(name.lower()).search(low))
    if field is None or name not in reason or not _PROPER.fullmatch(name):
        return False
    for m in _word(name).finditer(reason):  # (said of it: just before it, or after)
        if _MISSING.search(reason[max(0, m.start() - 20) : m.start()]) or _MISSING.search(
            reason[m.end() : m.end() + 25]
        ):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)")


def rule_named_item_filtered_out(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's code selection that dropped the item the failure names."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    if not (_id_like(reason) or _PROPER.search(reason)):
        return
    low = reason.lower()
    events = run.events
    runs = NodeRuns(events)
    texts: dict[int, str] = {}

    def text(i: int) -> str:
        if i not in texts:
            e = events[i]
            texts[i] = compact_json(e.input if e.type is not EventType.AGENT_END else e.output)
        return texts[i]

    final = next(  # the graph's final state: what the state's reducers made of updates
        (
            e.output
            for e in reversed(events)
            if e.type is EventType.FINAL_ANSWER and not e.agent_name
        ),
        None,
    )
    seen: list[tuple[int, str | None, frozenset[str]]] = []  # (where, field, names) so far
    for at, event in enumerate(events):
        if event.type not in _SOURCES:
            continue
        payload = event.input if event.type is EventType.USER_INPUT else event.output
        if event.type is EventType.AGENT_END and isinstance(payload, dict):
            written = list(_channels(payload))  # (a state update: by the keys it writes)
            found = [(field, names) for field, names, _ in written]
        else:
            written = []
            found = list(_collections(payload, [BUDGET], keys=event.type is EventType.TOOL_RESULT))
        if written and event.agent_name not in runs.outer and runs.plain_until(event, at):
            for field, kept, channel in written:
                for source, had_field, had in reversed(seen):
                    if source < at - LOOKBACK:
                        break
                    if (field is not None and field != had_field) or not kept < had:
                        continue
                    folded = {k.lower() for k in kept}
                    dropped = sorted(
                        n
                        for n in had - kept
                        if n.lower() not in folded  # (not a case a dedup folded)
                        and _named_by(reason, low, n, had_field)
                        and not _went_on(n, at, source, events, text, runs.outer)
                        and not _merged(n, channel, final)
                    )
                    if dropped:
                        if not sorted_before(ctx, at):  # (kept a mis-sorted list's top)
                            yield _finding(event, events[source], sorted(kept), dropped)
                        return
        seen.extend((at, field, names) for field, names in found if len(names) >= 2)


def _channels(update: dict[Any, Any]) -> Iterator[tuple[str | None, frozenset[str], Any]]:
    """The collections a node's update writes, each with the state key it is under."""
    budget = [BUDGET]
    for channel, value in update.items():
        for field, names in _collections(value, budget, depth=1):
            yield field, names, channel


def _merged(name: str, channel: Any, final: Any) -> bool:
    """Whether the final state holds the item under the key the update wrote: the
    update was a part merged into the state (a reducer's delta), not a selection."""
    if not isinstance(final, dict) or channel not in final:
        return False
    return bool(_word(name).search(compact_json(final[channel])))


def _went_on(
    name: str, at: int, source: int, events: list[AgentEvent], text: Any, outer: set[str]
) -> bool:
    """Whether an item went on: the selection's own update holds it (a work queue's
    ``done``), or a tool call or a node's input after the source (a ``Send``
    branch's), or a node's update after the selection (not the end of a node that
    ran a subgraph, which echoes its state)."""
    pattern = _word(name)
    if pattern.search(text(at)):
        return True
    for i in range(source + 1, len(events)):
        e = events[i]
        if (
            e.type not in _CARRIED
            or i == at
            or (e.type is EventType.AGENT_END and e.agent_name in outer)
        ):
            continue
        if not pattern.search(text(i)):
            continue
        if i > at or e.type is not EventType.AGENT_END:
            return True
        # between the source and the selection, a node's update that holds it in a text
        # echoes the source (ToolNode's message of a tool's result); one that holds it
        # as an item of a collection used it (a work queue's ``done``)
        if any(name in names for _, names in _collections(e.output, [BUDGET], keys=False)):
            return True
    return False


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
