"""A value the failure says was wanted, seen in the run and then carried no further.

A planner reads "at most 120 EUR a night" and writes a plan without it; a summarizer
is given a quote whose total is 43,914 USD and writes one without the fee; a merge
node joins two scans and keeps one's issues. The run fails ("hotels over the 120 EUR
budget", "the real total 43,914"), and the value the failure names was in the run,
given to one step, and in nothing that step or any later one wrote. That step is
where it was lost (``memory.context_loss``); without this rule the free tier guessed.

The rule keeps to what it can read for certain, in a failed run that says what was
wanted (the success check's reason, or the reference answer): a value of it (a
number of three digits or more, "43,914", "43914.00" and "120EUR" alike, not a year
unless a currency or unit goes with it; or an identifier with digits, "INV-1042",
"CVE-2024-38371", "T-4502") that some step held (the user's input, a tool's result,
a node's update, a model's prompt or reply) and that the run's last word (its last
model reply or node update, whichever came last) does not hold. The step blamed is
the one that lost it: the first model call given it (in its prompt) whose reply's
text, of ``MIN_REPLY`` characters or more (not a route's label, nor a tool call
alone), does not hold it, and after which nothing wrote it again; else the first
model reply or node update after the last step that wrote it. Of several such
values, the earliest step is blamed. It is a weaker signal than the other rules'
(a value may be left out on purpose), so its confidence is lower than theirs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING

from agentdebug.detect.adaptation import text_reply
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "needed_value_lost"
MOST_VALUES = 8  # values of a failure's reason looked for
MIN_REPLY = 40  # characters of a model's reply expected to carry what it was given
_READ = 100_000  # characters of an event read
# an identifier with digits ("INV-1042", "CVE-2024-38371", "T-4502", "A320neo"), or a
# number of three digits or more ("43,914", "505.50", "120EUR"); not a part of a
# longer word or number (possessive: a long run of digits or parts is read once)
_VALUE = re.compile(
    r"(?<![\w.,-])(?:(?P<id>[A-Za-z]+[-_]?\d{2,}+(?:[-_]?[^\W_])*+)(?![\w-])"
    r"|(?P<number>\d{1,3}(?:,\d{3})++(?:\.\d+)?|\d{3,}+(?:\.\d+)?)(?!\d|[.,]\d))"
)
# a currency or unit beside a number: "$2000", "2000 EUR", "2000€", "2000 kg"
_MONEY_BEFORE = re.compile(r"[€$£]\s?$")
_UNIT_AFTER = re.compile(r"\s?(?:[%€$£]|(?i:eur|usd|gbp|chf|jpy|kg|km|mi|lbs?|ms|kb|mb|gb|tb)\b)")
# a model's reply: a call, or an agent's message in an imported log (Who&When's)
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.MESSAGE})
_DECISIONS = frozenset({*_MODEL, EventType.AGENT_END})


def wanted_values(text: str) -> list[tuple[str, re.Pattern[str]]]:
    """The values of a failure's reason, each as written and as a pattern that finds
    it in any of its forms ("43,914" as "43914" and "43,914.00" too)."""
    found: dict[str, re.Pattern[str]] = {}
    for m in _VALUE.finditer(text):
        if m.group("id"):
            value = m.group("id")
            pattern = rf"(?<![\w.-]){re.escape(value)}(?![\w]|-\w)"
        else:
            value = m.group("number").replace(",", "")
            whole, _, decimals = value.partition(".")
            year = not decimals and len(whole) == 4 and 1900 <= int(whole) <= 2100
            if year and not _priced(text, m):
                continue  # a year (not "2000 EUR", "$2000")
            decimals = decimals.rstrip("0")
            grouped = ",?".join(digit_groups(whole))
            tail = rf"\.{decimals}0*" if decimals else r"(?:\.0+)?"
            pattern = rf"(?<![\w.,]){grouped}{tail}(?!\d|[.,]\d)"
        if value not in found:
            found[value] = re.compile(pattern)
            if len(found) == MOST_VALUES:  # (a long reason: the first values are enough)
                break
    return list(found.items())


def _priced(text: str, m: re.Match[str]) -> bool:
    """Whether a currency or a unit goes with the number ``m`` found in ``text``."""
    before = text[max(0, m.start() - 2) : m.start()]  # (not the whole text before it)
    return bool(_MONEY_BEFORE.search(before) or _UNIT_AFTER.match(text, m.end()))


def digit_groups(digits: str) -> list[str]:
    """``digits`` in groups of three from the right ("43914" -> ["43", "914"])."""
    head = len(digits) % 3 or 3
    return [digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)]


def _reply_text(event: AgentEvent) -> str:
    """A model's reply as text, without a tool call's ids and names."""
    said = text_reply(event)
    if said is not None:
        return said
    out = event.output
    return str(out.get("content") or "") if isinstance(out, dict) else ""


def failure_values(run: AgentTrajectory) -> list[tuple[str, re.Pattern[str]]]:
    """The values a failed run's reason and reference answer name (none for a run
    that did not fail)."""
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return []
    return wanted_values(f"{run.outcome.reason or ''} {run.reference_answer or ''}")


def rule_needed_value_lost(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's wanted value that a step was given and did not pass on."""
    run = ctx.trajectory
    values = failure_values(run)
    if not values:
        return
    from agentdebug.detect.misparsed import misparsed  # (it reads failure_values)

    misread = misparsed(ctx)
    if misread is not None:  # (the amount a step misread is not one a later step lost)
        meant = str(misread.metadata.get("means", ""))
        values = [(v, p) for v, p in values if not _same_number(v, meant)]
    from agentdebug.detect.picked import picked
    from agentdebug.detect.returned import explains, returned

    pick = picked(ctx)
    if pick is not None:  # (the values of the record taken and the one wanted: picked's)
        values = [(v, p) for v, p in values if not pick.explains(v)]
    other = returned(ctx)  # (the identifier a lookup was asked for and did not return)
    values = [(v, p) for v, p in values if not explains(other, v)]
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    # the end of a node that ran a subgraph echoes the subgraph's state: not a step
    # that wrote anything, nor the run's last word (nor is the final state)
    inner = {e.agent_name for e in run.events if e.agent_name and "/" in e.agent_name}
    outer = {name.rsplit("/", k)[0] for name in inner for k in range(1, name.count("/") + 1)}
    events = [
        e
        for e in run.events
        if e.type is not EventType.FINAL_ANSWER
        and not (e.type is EventType.AGENT_END and e.agent_name in outer)
    ]
    schema = run.metadata.get("state_schema")
    reducers = schema.get("reducers") if isinstance(schema, dict) else None
    # (keys a reducer merges; without the graph's schema, a conversation's, by custom)
    merged = set(reducers) if isinstance(reducers, dict) else {"messages"}
    texts = [(flatten(e.input, _READ), flatten(e.output, _READ)) for e in events]
    decisions = [i for i, e in enumerate(events) if e.type in _DECISIONS and e.agent_name]
    if not decisions:
        return
    end = decisions[-1]  # the run's last word
    models = [i for i in decisions if events[i].type in _MODEL]
    best: tuple[int, str, AgentEvent, str] | None = None  # (blamed, value, holder, field)
    for value, pattern in values:
        if pattern.search(texts[end][1]):
            continue  # carried to the end
        given = [bool(pattern.search(g)) for g, _ in texts]
        wrote = [  # (what the user asked is written by the user)
            bool(pattern.search(g if e.type is EventType.USER_INPUT else w))
            for e, (g, w) in zip(events, texts, strict=True)
        ]
        if not any(given) and not any(wrote):
            continue
        last_wrote = max((i for i, w in enumerate(wrote) if w), default=-1)
        first = min(i for i in range(len(events)) if given[i] or wrote[i])
        if _made_here(events[first], given[first], reason, pattern) or _marked_wrong(
            reason, pattern
        ):
            continue  # (the run made it: the wrong value the failure quotes, not one wanted)
        blamed = next(
            (
                i
                for i in models
                if i >= first
                and i > last_wrote  # (after it, nothing wrote it again: lost here)
                and given[i]
                and len(_reply_text(events[i]).strip()) >= MIN_REPLY
            ),
            None,
        )
        if blamed is not None:
            at, field = blamed, "input"
        else:
            at = last_wrote
            field = "input" if events[at].type is EventType.USER_INPUT else "output"
            carried = sum(wrote) > 1
            keys = _keys_holding(events[at], field, pattern, merged) if at >= 0 else None
            blamed = (
                next(
                    (
                        i
                        for i in decisions
                        if i > at and _wrote_over(events[i], keys, value, carried or i == end)
                    ),
                    None,
                )
                if at >= 0
                else None
            )
        if blamed is not None and (best is None or blamed < best[0]):
            quote = pattern.search(texts[at][0 if field == "input" else 1])
            best = (blamed, quote.group() if quote else value, events[at], field)
    if best is not None:
        blamed, value, holder, field = best
        yield _finding(events[blamed], holder, value, field)


def _keys_holding(
    holder: AgentEvent, field: str, held: re.Pattern[str], merged: set[str]
) -> set[str] | None:
    """The keys of the holder's mapping that hold the value, but those a reducer
    merges (an update appends to ``messages``, it does not write over it); None when
    the holder is no mapping (a model's reply, a tool's text)."""
    given = holder.input if field == "input" else holder.output
    if not isinstance(given, Mapping):
        return None
    return {
        str(key)
        for key, part in given.items()
        if key not in merged and held.search(flatten(part, _READ))
    }


def _wrote_over(step: AgentEvent, keys: set[str] | None, value: str, carried: bool) -> bool:
    """Whether a step after the value's last holder went on without it: a model's
    reply; a node's update that wrote over a key the holder's mapping held it under
    (``keys``: ``license_scan``'s ``"issues": []`` over ``sec_scan``'s CVE); or, of a
    figure no step had carried on, an update that wrote something and is not the run's
    last word (``carried``: else; a batch plan made from the row count it dropped). A
    state graph keeps every key an update leaves out: a node that wrote nothing, or
    keys of its own, did not drop the ticket id the run is about, nor did a closing
    summary drop a figure the steps before it had carried, or a variance a check
    found."""
    if step.type is not EventType.AGENT_END:
        return True
    update = step.output
    if not isinstance(update, Mapping):
        return update is not None
    if keys and any(key in update for key in keys):
        return True  # (wrote over where it was)
    wrote = any(v not in (None, "", [], {}) for v in update.values())
    if keys is None:
        return wrote
    return wrote and value[:1].isdigit() and not carried


def decimal_of(text: str) -> Decimal | None:
    """A number as a failure or a record writes it ("1,250.00", "-3.5"), or None."""
    try:
        return Decimal(text.replace(",", ""))
    except ArithmeticError:
        return None


def _same_number(value: str, other: str) -> bool:
    mine = decimal_of(value) if value[:1].isdigit() else None
    return mine is not None and mine == decimal_of(other)


_WRONG = re.compile(r"(?i)\b(?:wrong|incorrect|erroneous|mistaken|not right)\b")
# what says, between the wrong-word and the value, that the value is a reason or a
# need rather than the wrong one ("wrong because it ignored the 120 EUR budget")
_NOT_IT = re.compile(
    r"(?i)[;:\-–]|\b(?:but|while|whereas|however|with|should|expected|instead|because|since|"
    r"ignor\w*|miss\w*|must|needs?|budget|limit|max\w*|under|over)\b"
)


def _marked_wrong(reason: str, pattern: re.Pattern[str]) -> bool:
    """Whether the reason calls the value itself wrong: the value in the parenthesis
    opened just after the wrong-word ("the invoice total is wrong (... $13,392.00);
    with the discount it is $11,383.20"), or a few words after it with nothing
    between that makes it a reason ("an incorrect total 13,392.00"): the run's own
    value the failure quotes, not one the run needed."""
    found = pattern.search(reason)
    if found is None:
        return False
    window = reason[max(0, found.start() - 80) : found.start()]
    said = [m.end() for m in _WRONG.finditer(window)]
    if not said:
        return False
    between = window[said[-1] :]
    if between.lstrip().startswith("(") and ")" not in between:
        return True
    return len(between) <= 25 and not _NOT_IT.search(between)


def _made_here(first: AgentEvent, given: bool, reason: str, pattern: re.Pattern[str]) -> bool:
    """Whether the value is one the run made and the failure prints as the run's:
    first held as a tool call's argument (``charge(amount_minor=12800000)``), and
    written in the reason as a check writes what it found, in a list, a tuple or
    quotes (``[('JPY', 12800000)]``). That is what went wrong ("the gateway recorded
    ...; finance approved 128,000"), not a value a step was given and lost. (A value
    a node passes straight on to a tool, a budget from the run's configuration, is
    said in words: "over the 120 EUR budget"; and a model's reply that first says a
    value may have worked it out right, a total of payouts the next step dropped.)"""
    if first.type is not EventType.TOOL_CALL or not given:
        return False
    found = pattern.search(reason)
    if found is None:
        return False
    before = reason[: found.start()]
    return (
        before.count("[") > before.count("]")
        or before.count("(") > before.count(")")
        or before[-1:] in ("'", '"')
    )


def _finding(event: AgentEvent, seen: AgentEvent, value: str, field: str) -> Finding:
    agent = event.agent_name
    where = "its prompt" if seen is event else f"{seen.agent_name or seen.type.value}"
    at = f"step {seen.step_index}" if seen is not event else "its own call"
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{value!r}, which the failure says was wanted, was last held by {where} at {at}; "
        f"{agent} went on without it",
        confidence=0.45,
        evidence=[quoted(seen, field, value)],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: carry {value!r} forward (it was given "
                f"it, at step {seen.step_index}, and wrote nothing that holds it); the run "
                "needed it."
            ),
            "value": value,
        },
    )
