"""An amount kept in minor units (cents) that a step wrote out as whole currency.

Payment systems keep amounts in minor units: an account's ``price_cents: 129900``
is $1,299.00. A render node formats it with ``f"${price_cents:,.2f}"`` and the
renewal notice quotes $129,900.00 a year. The run fails on the figure, and the
first place the run holds 129900 is the step that loaded the account, rightly, in
cents: without this rule :mod:`.coded` blamed that step for making the figure.

The rule keeps to what it can read for certain, in a failed run: a figure the
failure names (as :mod:`.coded` reads them, not one it gives as wanted) that a
source before (the user's input, a tool's call or result, a node's update) holds as
a whole number under a key that says minor units (``price_cents``, ``amount_minor``,
``total_in_cents``, ``fee_pence``), and that a later step writes out as currency (a
symbol or a code beside it: "$129,900.00", "129900.00 USD"). The first step that
wrote it so is blamed: its code (``reflection.flawed_reasoning``), or its model
(``observation.output_misread``: it read cents as dollars).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.coded import _named, _number_pattern
from agentdebug.detect.node_runs import MODEL_TYPES
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "minor_units_as_major"
BUDGET = 20_000  # values of a payload looked at for a key in minor units
_READ = 200_000  # characters of an event read
_MINOR_KEY = re.compile(r"(?i)(?:^|[_\W])(?:cents?|minor|pence|paise|kopecks?)(?:$|[_\W])|cents$")
_SOURCES = frozenset(
    {EventType.USER_INPUT, EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.AGENT_END}
)
_WRITERS = frozenset({EventType.AGENT_END, EventType.TOOL_CALL, *MODEL_TYPES})
_CURRENCY = r"(?:[$€£]|\b(?:USD|EUR|GBP|CAD|AUD|CHF|NZD|SGD|HKD|SEK|NOK|DKK|INR)\b)"


def rule_minor_units_as_major(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's figure that was an amount in cents, written out as dollars."""
    finding = minor_units(ctx)
    if finding is not None:
        yield finding


def minor_units(ctx: RuleContext) -> Finding | None:
    """The finding, read once per run (:mod:`.coded` leaves such a figure to it)."""
    return ctx.once(RULE, lambda: _minor_units(ctx))


def _minor_units(ctx: RuleContext) -> Finding | None:
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    wrong = [
        whole  # (a whole number: "129,900.00", "$129900")
        for v in _named(run.outcome.reason or "", "")
        if v.figure
        and v.wrong
        and (whole := v.text.partition(".")[0]).isdigit()
        and not v.text.partition(".")[2].strip("0")
    ]
    if not wrong:
        return None
    events = run.events
    for number in wrong:
        source = _kept_in_minor_units(events, int(number))
        if source is None:
            continue
        at, key = source
        figure = _number_pattern(number).pattern
        # (beside it in one text: a record's fields, joined by new lines, are not)
        written = re.compile(rf"{_CURRENCY}[ \u00a0]?{figure}|{figure}[ \u00a0]?{_CURRENCY}")
        for e in events[at + 1 :]:
            if e.type not in _WRITERS:
                continue
            said = e.input if e.type is EventType.TOOL_CALL else e.output
            m = written.search(flatten(said, _READ))
            if m is not None:
                return _finding(e, m.group(), events[at], key, int(number))
    return None


def _kept_in_minor_units(events: list[AgentEvent], number: int) -> tuple[int, str] | None:
    """The first source holding ``number`` under a key in minor units, and the key."""
    for i, e in enumerate(events):
        if e.type not in _SOURCES:
            continue
        payload = e.input if e.type in (EventType.USER_INPUT, EventType.TOOL_CALL) else e.output
        key = _minor_key(payload, number, [BUDGET])
        if key is not None:
            return i, key
    return None


def _minor_key(value: Any, number: int, budget: list[int], depth: int = 0) -> str | None:
    if budget[0] <= 0 or depth > 6:
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            budget[0] -= 1
            if (
                isinstance(k, str)
                and _MINOR_KEY.search(k)
                and not isinstance(v, bool)
                and isinstance(v, int | str)
                and str(v).strip() == str(number)
            ):
                return k
            if isinstance(v, dict | list):
                found = _minor_key(v, number, budget, depth + 1)
                if found is not None:
                    return found
    elif isinstance(value, list):
        for v in value:
            budget[0] -= 1
            if isinstance(v, dict | list):
                found = _minor_key(v, number, budget, depth + 1)
                if found is not None:
                    return found
    return None


def _finding(event: AgentEvent, shown: str, source: AgentEvent, key: str, number: int) -> Finding:
    agent, step = event.agent_name, event.step_index
    model = event.type in MODEL_TYPES
    right = f"{number / 100:,.2f}"
    by = "its model read" if model else "its code wrote"
    where = source.agent_name or "the run's input"
    fix = (
        f"At step {step}, {agent}: {key!r} is in minor units (cents); divide by 100 before "
        f"writing it as currency ({right}, not {shown})."
    )
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{shown!r}, which the failure names, is {key!r} = {number} as {where} gave it at "
        f"step {source.step_index}, an amount in minor units ({right}); {by} it as whole "
        f"currency at step {step}",
        confidence=0.6,
        evidence=[quoted(event, "input" if event.type is EventType.TOOL_CALL else "output", shown)],
        metadata={"fix": fix, "value": shown},
    )
