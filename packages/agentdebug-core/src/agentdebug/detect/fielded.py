"""A step that took a record's value from a field beside the one the failure names.

A travel profile gives ``"preferred_name": "Kate Alvarez"`` and
``"legal_name_on_passport": "Katherine M. Alvarez"``; the booking model tickets the
flight as "Kate Alvarez", and at check-in the airline refuses a boarding pass ("the
name on the ticket doesn't match her passport"). A contact card's ``work_email`` sent
what was meant for ``personal_email``; a price list's ``list_price`` charged where
``sale_price`` was due. Every step after the slip used the value faithfully, and
without this rule the free tier blamed the last of them, or guessed.

The rule keeps to what it can read for certain, in a failed run: a mapping the run
held (its input, a tool's result, also as JSON text, a node's update) with two text
fields of one kind (values of two to 120 characters that share a word of four
letters or more, not ``https``, or both e-mail addresses), where the failure (its reason, or the
reference answer) names a word of one field's key (``passport``; four letters or
more, not a word any key has: ``name``, ``email``, ``address``...) and no word of the
other's, and names the other field's value as written (the failure says what was
taken: "Kate Alvarez couldn't board ... doesn't match her passport"; a word of a key
said in passing, "the shipping took eleven days", is not enough); and a later step
(a model's reply or tool call, a node's update made by its own code) that wrote the
other field's value whole, while no step after the mapping wrote the named field's
value. That step is blamed: a model as
``observation.output_misread``, a node's code as ``reflection.flawed_reasoning``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns, written
from agentdebug.detect.records import has, leaves
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import json_of

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "sibling_field_taken"
MOST_PAIRS = 2_000  # field pairs of a run looked at
_VISITS = 20_000  # parts of one payload walked
_WRITERS = frozenset({*MODEL_TYPES, EventType.TOOL_CALL, EventType.AGENT_END})
# words of keys that say what kind of value a field holds, not which one
_PLAIN = frozenset(
    {"name", "names", "email", "mail", "address", "phone", "number", "value", "text"}
    | {"data", "type", "code", "date", "time", "info", "details", "field", "label"}
    | {"line", "first", "last", "full", "display", "string", "title", "description"}
)
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+")
_ADDRESS_WORDS = frozenset({"http", "https", "www", "html", "json"})
_WORD = re.compile(r"[^\W\d_]{3,}")


def _key_words(key: str) -> set[str]:
    return {w.lower() for w in _KEY_WORDS.findall(key) if len(w) >= 4} - _PLAIN


def _mappings(payload: Any) -> Iterator[dict[str, Any]]:
    """The mappings of a payload (a JSON text's too)."""
    stack = [payload]
    visits = 0
    while stack and visits < _VISITS:
        visits += 1
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item[:500])
        elif isinstance(item, str) and item[:1] in "[{":
            parsed = json_of(item)
            if parsed is not None:
                stack.append(parsed)


def _alike(one: str, other: str) -> bool:
    """Two values of one kind: both e-mail addresses, or sharing a word of four letters
    or more that is not an address's (``https``, ``www``, ``com``)."""
    if "@" in one and "@" in other:
        return True
    mine = {w.lower() for w in _WORD.findall(one) if len(w) >= 4} - _ADDRESS_WORDS
    return bool(mine & {w.lower() for w in _WORD.findall(other)})


def _has(text: str, value: str) -> bool:
    """Whether ``text`` (casefolded) holds ``value`` whole, as words of their own."""
    return has(text, value.casefold())


def rule_sibling_field_taken(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that wrote the value of the field beside the named one."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}".casefold()
    words = set(re.findall(r"[a-z]+", failure))
    if not words:
        return
    events = run.events
    runs = NodeRuns(events)
    texts: list[str | None] = [None] * len(events)

    def said(i: int) -> str:
        found = texts[i]
        if found is None:
            e = events[i]
            found = leaves(written(e))
            texts[i] = found = found.casefold()
        return found

    pairs = 0
    for i, event in enumerate(events):
        payload = event.input if event.type is EventType.USER_INPUT else event.output
        for mapping in _mappings(payload):
            fields = [
                (str(k), v.strip())
                for k, v in mapping.items()
                if isinstance(v, str) and 2 <= len(v.strip()) <= 120
            ]
            for key, value in fields:
                if not _key_words(key) & words:
                    continue  # (the failure does not name this field)
                for other_key, other in fields:
                    pairs += 1
                    if pairs > MOST_PAIRS:
                        return
                    if (
                        other_key == key
                        or other.casefold() == value.casefold()
                        or _key_words(other_key) & words
                        or not _has(failure, other)  # (the failure names what was taken)
                        or not _alike(value, other)
                    ):
                        continue
                    at = _taker(events, runs, i, value, other, said)
                    if at is not None:
                        yield _finding(events[at], events[i], key, value, other_key, other)
                        return


def _taker(
    events: list[AgentEvent], runs: NodeRuns, source: int, wanted: str, taken: str, said: Any
) -> int | None:
    """The first step after ``source`` that wrote ``taken`` whole, when no step after
    ``source`` wrote ``wanted``."""
    found = None
    for j in range(source + 1, len(events)):
        event = events[j]
        if event.type not in _WRITERS or not runs.wrote(event, j):
            continue
        text = said(j)
        if _has(text, wanted):
            return None  # (the named field's value went on too)
        if found is None and _has(text, taken):
            found = j
    return found


def _finding(
    event: AgentEvent, source: AgentEvent, key: str, value: str, other_key: str, other: str
) -> Finding:
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{who} at step {step} wrote {other!r}, the record's {other_key!r} (held at step "
        f"{source.step_index}), where the failure names its {key!r}, {value!r}, which no "
        "step wrote",
        confidence=0.5,
        evidence=[
            quoted(event, "input" if event.type is EventType.TOOL_CALL else "output", other),
            quoted(source, "input" if source.type is EventType.USER_INPUT else "output", value),
        ],
        metadata={
            "fix": (
                f"At step {step}, {who}: use the record's {key!r} ({value!r}), not its "
                f"{other_key!r} ({other!r})."
            ),
            "value": other,
            "wanted": value,
        },
    )
