"""A value the failure names that a node's own code made: no model, no tool, nothing
before it held it.

A billing graph prices an order from a quote (``total: 128000``, yen), a person
approves it, and a plain node charges ``amount_minor=round(total * 100)``: twelve
million eight hundred thousand yen, since yen has no minor unit. A refund report
averages regional percentages instead of weighting them and reports 3.83 % where
the orders say 6.6 %. A mail node's ``cc=[]`` default keeps the last ticket's
requester and copies them on this one. Each run fails, the failure names the wrong
value, and the first place the run holds it is a step with no model in it: what
the step was given did not hold it, so its own code made it. Without this rule the
free tier blamed the model that later reported the value (it reported it
faithfully), or guessed.

The rule keeps to what it can read for certain, in a failed run whose reason says
what went wrong: a value the reason names (a figure: a number with a decimal part,
thousands separators, a currency or a unit beside it, "3.83 %", "12,800,000",
"('JPY', 12800000)", not a bare count, id or date; a time of day the reason
quotes or names beside another, "7:30 PM" held as "19:30" too, not one that is a
time held before plus a duration the reason names, and after any figure or
address; or an e-mail address), not one
it gives as the wanted one ("expected", "should be", "instead of", "approved"...,
in the same clause: "expected X but got Y" names Y as wrong), nor one of the
reference answer (the right one); whose first holder in the run, in any of its
forms ("12,800,000" is "12800000"; "3.83" is held by "3.8333" and "3.830", not by
"3.85"), is the update or a tool call's arguments of a node run the run recorded
(its start and its end) that had called no model by then, the call its own (not
one a model asked for); that the run then acted on or ended with (that call, a
later tool call, the run's last word: not the graph's final state, which holds
everything); with no other figure (or address) the failure names at hand between
its making and that use (else the use chose the wrong one: a charge of the cart's
total while the discounted total was in the state); and not held by the state the
run started from (a thread's earlier turn: the final state's keys that nothing in
the run wrote). A figure is ``reflection.flawed_reasoning`` (code that computed it
wrong: a unit, an average, a rounding); an address is ``memory.wrong_recall`` (a
value of another task: a default or a cache that kept it), or
``reflection.flawed_reasoning`` when the words of its name are the run's (an
address the code built from a name). Of several such values, the one made last is
blamed (a right value is given or made before the step that went wrong with it).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from agentdebug.detect.lost import digit_groups, wanted_values
from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import QUOTED
from agentdebug.detect.unsourced import joined_parts
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "value_made_in_code"
MOST_VALUES = 12  # values of a failure's reason looked for
_READ = 1_000_000  # characters of an event read
_MADE = frozenset({EventType.AGENT_END, EventType.TOOL_CALL})
_WORDS = frozenset({EventType.AGENT_END, EventType.FINAL_ANSWER, EventType.MESSAGE, *MODEL_TYPES})
# a number with a decimal part (the lost-value reader takes three digits or more)
_DECIMAL = re.compile(r"(?<![\w.,])(\d{1,2})\.(\d+)(?![\d.,]\d|\w)")
# a time of day: "7:30 PM", "19:30", "07:30:00", "9:05 a.m."
_TIME = re.compile(
    r"(?<![\w:.])(\d{1,2}):([0-5]\d)(?::[0-5]\d)?(?:\s?([AaPp])\.?[Mm]\.?(?!\w))?(?![\d:])"
)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+")
# the reason giving the value that was wanted, before it in its clause
_WANTED = re.compile(
    r"(?i)\b(?:expected|should(?: have)?(?: be| been)?|instead of|rather than|correct|"
    r"approved|wanted|ought to be)\b"
)
_CLAUSE = re.compile(r"(?i)\b(but|got|yet|while|whereas|however)\b|;")
_CONTRASTS = frozenset({"but", "yet", "whereas", "however"})  # ("while": also of time)
_STATES = re.compile(r"(?i)\b(?:is|are|shows?|says?|lists?|holds?|reads?)\b")
_CURRENCY_BEFORE = re.compile(
    r"(?i)(?:[€$£¥]|\b(?:eur|usd|gbp|jpy|chf|cad|aud|cny|inr|sek|nok|dkk)\b)\W{0,4}$"
)
_UNIT_AFTER = re.compile(
    r"\s?(?:[%€$£¥]|(?i:eur|usd|gbp|jpy|chf|cad|aud|cny|inr|cents?|percent|kg|km|mi|lbs?|"
    r"ms|kb|mb|gb|tb|kwh|units)\b)"
)


class _Value:
    """A value the failure names: as written, how to find it, what kind it is."""

    def __init__(self, text: str, pattern: re.Pattern[str], figure: bool, wrong: bool) -> None:
        self.text, self.pattern, self.figure, self.wrong = text, pattern, figure, wrong
        whole, _, decimals = text.partition(".")
        self._places = len(decimals) if figure and decimals and len(whole) <= 2 else 0

    def held(self, text: str, lowered: bool = False) -> Iterator[re.Match[str]]:
        """Where ``text`` holds it (a longer decimal only when it rounds to it; an
        address in any case, in ``text`` lowercased unless it is ``lowered``)."""
        if not self.figure and not lowered:
            text = text.lower()
        for m in self.pattern.finditer(text):
            if not self._places or _rounds_to(m.group(), self.text, self._places):
                yield m


def _rounds_to(held: str, value: str, places: int) -> bool:
    try:
        near = Decimal(held).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    except ArithmeticError:
        return False
    return near == Decimal(value)


def _wanted_here(reason: str, at: int) -> bool:
    """Whether the clause before ``at`` gives the value there as the wanted one: it
    says so ("expected", "should be"), or it is the second half of a contrast that
    states what is ("charged 120.0 but the discounted total is 90.0", "... but the
    ledger shows 6,150.00") after a first half that did not say what was wanted
    ("expected X but the gateway shows Y": Y is the wrong one; so is Y in "expected
    X but got Y", and in "... but was charged Y", which says what was done)."""
    parts = _CLAUSE.split(reason[max(0, at - 80) : at])
    clause = parts[-1]
    if _WANTED.search(clause):
        return True
    marker = (parts[-2] or "").lower() if len(parts) > 1 else ""
    first_half = parts[-3] if len(parts) > 2 else ""
    return marker in _CONTRASTS and not _WANTED.search(first_half) and bool(_STATES.search(clause))


def _is_figure(reason: str, start: int, end: int) -> bool:
    """Whether the number at ``reason[start:end]`` is written as an amount: thousands
    separators, a decimal part, a currency or a unit beside it (not a count or an id)."""
    written = reason[start:end]
    return (
        "," in written
        or "." in written
        or bool(_CURRENCY_BEFORE.search(reason[max(0, start - 12) : start]))
        or bool(_UNIT_AFTER.match(reason, end))
    )


def _number_pattern(value: str) -> re.Pattern[str]:
    """A number in any of its forms ("12800000" as "12,800,000" and "12800000.00"),
    its first digits first (a pattern that opens with a look-behind is tried at
    every character of a run's text; one that opens with a literal is searched for)."""
    whole, _, decimals = value.partition(".")
    groups = digit_groups(whole)
    decimals = decimals.rstrip("0")
    tail = rf"\.{decimals}0*" if decimals else r"(?:\.0+)?"
    first = groups[0]
    rest = "".join(f",?{g}" for g in groups[1:])
    return re.compile(rf"{first}(?<![\w.,]{first}){rest}{tail}(?!\d|[.,]\d)")


def _time_pattern(m: re.Match[str]) -> re.Pattern[str] | None:
    """The time of day ``_TIME`` matched, in any of its forms: "7:30 PM" as "19:30",
    "07:30 pm", "7:30:00 PM"; one written without AM or PM and not past 12, as
    written, whatever follows ("7:30" is "7:30 AM" and "7:30 PM")."""
    hour, minute = int(m.group(1)), int(m.group(2))
    if m.group(3) is None and hour <= 12:  # (as written: either half of the day)
        return re.compile(rf"(?<![\d:]){'0?' if hour < 10 else ''}{hour}:{minute:02d}(?!\d)")
    at = _minutes(m)
    if at is None:
        return None
    h24 = at // 60
    h12, half = h24 % 12 or 12, "p" if h24 >= 12 else "a"
    zero = "0?" if h24 < 10 else ""
    twelve = rf"0?{h12}:{minute:02d}(?::[0-5]\d)?\s?(?i:{half})\.?(?i:m)(?!\w)"
    day = rf"{zero}{h24}:{minute:02d}(?::[0-5]\d)?(?!\d|\s?(?i:[ap])\.?(?i:m)(?!\w))"
    return re.compile(rf"(?<![\d:])(?:{twelve}|{day})")


def _in_quotes(text: str, at: int) -> bool:
    """Whether ``text[at]`` is inside a quotation (what an output said, as quoted)."""
    return any(q.start() < at < q.end() for q in QUOTED.finditer(text))


def _named(reason: str, reference: str) -> list[_Value]:
    """The figures and addresses the failure names: those of its reason that are not
    given as wanted may be wrong ones; the reference answer's are the right ones
    (the first few: a long reason's others are neither read nor compiled)."""
    return list(itertools.islice(_each_named(reason, reference), MOST_VALUES))


def _each_named(reason: str, reference: str) -> Iterator[_Value]:
    for text, wrong_ok in ((reason, True), (reference, False)):
        for m in _DECIMAL.finditer(text):
            whole, decimals = m.group(1), m.group(2).rstrip("0")
            if not decimals:  # ("90.0": a whole number of two digits, looked for as
                yield _Value(whole, _number_pattern(whole), True, False)  # a wanted one)
                continue
            pattern = re.compile(rf"{whole}\.(?<![\w.,]{whole}\.)\d+(?!\d|[.,]\d)")
            wrong = wrong_ok and not _wanted_here(text, m.start())
            yield _Value(f"{whole}.{decimals}", pattern, True, wrong)
        times = [(m, p) for m in _TIME.finditer(text) if (p := _time_pattern(m)) is not None]
        several = len({p.pattern for _, p in times}) > 1
        for m, timed in times:  # (a time the failure is about: quoted as what was said,
            # or beside another, the one wanted; not one saying when a thing happened)
            if several or _in_quotes(text, m.start()):
                wrong = wrong_ok and not _wanted_here(text, m.start())
                yield _Value(m.group().rstrip("."), timed, True, wrong)
        for value, written in wanted_values(text):
            at = written.search(text)
            if at is None or not value[:1].isdigit() or not _is_figure(text, *at.span()):
                continue
            wrong = wrong_ok and not _wanted_here(text, at.start())
            yield _Value(value, _number_pattern(value), True, wrong)
        for m in _EMAIL.finditer(text):
            value = m.group().rstrip(".").lower()  # (looked for in the run's text lowercased)
            head = re.escape(value[0])
            pattern = re.compile(rf"{head}(?<![\w.+-]{head}){re.escape(value[1:])}(?![\w-]|\.\w)")
            wrong = wrong_ok and not _wanted_here(text, m.start())
            yield _Value(value, pattern, False, wrong)


class _Texts:
    """The run's events' text (readable and as JSON), joined, with where each starts."""

    def __init__(self, events: list[AgentEvent]) -> None:
        parts = [
            " ".join(
                (
                    flatten(e.input, _READ),
                    flatten(e.output, _READ),
                    compact_json(e.input)[:_READ],
                    compact_json(e.output)[:_READ],
                )
            )
            for e in events
        ]
        self.text, self.starts = joined_parts(parts)
        self._lower: str | None = None

    def holders(self, value: _Value) -> list[int]:
        """The events that hold ``value``, in order."""
        if value.figure:
            text = self.text
        else:  # (an address: any case)
            if self._lower is None:
                self._lower = self.text.lower()
            text = self._lower
        found = {bisect.bisect_right(self.starts, m.start()) - 1 for m in value.held(text, True)}
        return sorted(found)


def _carried(run: AgentTrajectory) -> str:
    """The text of the state the run started from and did not write itself: the final
    state's keys that neither its input nor any node's update wrote (a thread's earlier
    turn); empty when the run records no final state."""
    final = next(
        (e for e in reversed(run.events) if e.type is EventType.FINAL_ANSWER and not e.agent_name),
        None,
    )
    if final is None or not isinstance(final.output, dict):
        return ""
    written: set[Any] = set()
    for e in run.events:
        payload = e.input if e.type is EventType.USER_INPUT else e.output
        if e.type in (EventType.USER_INPUT, EventType.AGENT_END) and isinstance(payload, dict):
            written.update(payload)
    carried = {k: v for k, v in final.output.items() if k not in written}
    return f"{flatten(carried, _READ)} {compact_json(carried)[:_READ]}" if carried else ""


def _own_call(call: AgentEvent, by_id: dict[str, AgentEvent]) -> bool:
    """Whether a tool call is its node's own (code that called a tool), not one a
    model asked for (filed under the model's reply, or carrying its call id)."""
    if call.metadata.get("tool_call_id") or call.metadata.get("role") == "assistant":
        return False
    parent = by_id.get(call.parent_id) if call.parent_id else None
    return parent is None or parent.type is EventType.AGENT_START


class Made:
    """A wrong value the failure names, made by a step's own code: where (its index in
    the run's events), the value, as the step's output holds it, the run's text."""

    def __init__(self, at: int, value: _Value, shown: str, texts: _Texts) -> None:
        self.at, self.value, self.shown, self.texts = at, value, shown, texts


def made_in_code(ctx: RuleContext) -> Made | None:
    """The wrong value this rule blames, read once per run (:mod:`.tallied` reads
    whether rows dropped before it explain it)."""
    return ctx.once(RULE, lambda: _made_in_code(ctx.trajectory))


def rule_value_made_in_code(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's wrong value whose first holder is a step with no model in it."""
    from agentdebug.detect.minor_units import minor_units
    from agentdebug.detect.misparsed import misparsed
    from agentdebug.detect.picked import picked
    from agentdebug.detect.tallied import dropped_rows, explains  # (they read this rule's)

    made = made_in_code(ctx)
    if made is None:
        return
    misread = misparsed(ctx)  # (the failure names the misread amount or its right value)
    if misread is not None and ctx.position.get(misread.event_id or "", made.at) < made.at:
        return  # (made from a number an earlier step misread: number_misparsed's)
    if explains(dropped_rows(ctx), made.value.text) or explains(minor_units(ctx), made.value.text):
        return  # (a total right for rows an earlier step dropped: tallied's; an amount
        # in cents written as dollars: minor_units')
    pick = picked(ctx)
    if pick is not None and pick.explains(made.value.text):
        return  # (a value of a record a later step took in the wanted one's place: picked's)
    value, events = made.value, ctx.trajectory.events
    built = not value.figure and _built_from(
        value.text, made.texts.text[: made.texts.starts[made.at]]
    )
    yield _finding(events[made.at], made.shown, value.figure or built, value.text)


def _made_in_code(run: AgentTrajectory) -> Made | None:
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    named = _named(run.outcome.reason or "", run.reference_answer or "")
    if not any(v.wrong for v in named):
        return None
    events = run.events
    by_id = {e.id: e for e in events}
    own = f"{flatten(run.metadata, _READ)} {run.goal or ''} {_carried(run)}"
    runs = NodeRuns(events)
    last_word = max(
        (i for i, e in enumerate(events) if e.type in _WORDS and (e.agent_name or e.type
         is not EventType.FINAL_ANSWER)),
        default=-1,
    )  # fmt: skip
    texts = _Texts(events)
    holders = {v.text: texts.holders(v) for v in named}
    best: tuple[tuple[bool, int], _Value, str] | None = None  # ((rank, where made), value, as held)
    for value in named:
        held = holders[value.text]
        if not value.wrong or not held or any(value.held(own)):
            continue  # (a wanted value; never held; or the run's input, configuration)
        first = held[0]
        made = events[first]
        if (
            made.type not in _MADE
            or (made.type is EventType.AGENT_END and made.agent_name in runs.outer)
            or not runs.plain_until(made, first)  # (recorded, and no model spoke by then)
            or (made.type is EventType.TOOL_CALL and not _own_call(made, by_id))
        ):
            continue
        said = made.input if made.type is EventType.TOOL_CALL else made.output
        where = next(value.held(f"{flatten(said, _READ)} {compact_json(said)[:_READ]}"), None)
        if where is None:
            continue  # (in what it was given, not in what it made)
        # where the run acted on it (the step's own call, a later one) or ended with it
        acted = first if made.type is EventType.TOOL_CALL or first == last_word else next(
            (
                i
                for i in held[1:]
                if events[i].type is EventType.TOOL_CALL
                or (i == last_word and any(value.held(flatten(events[i].output, _READ))))
            ),
            None,
        )  # fmt: skip
        if acted is None:
            continue
        if any(  # another value the failure names, of its kind, at hand when this one
            first < i < acted  # was used: the use chose the wrong one, not its maker
            # (one made with it, a sibling, only when the failure gives it as wanted;
            # then from where both were made)
            or (i == first and not other.wrong)
            for other in named
            if other is not value
            and other.figure == value.figure
            and (not other.wrong or holders[other.text][:1] != [first])
            for i in holders[other.text]
        ):
            continue
        timed = bool(_TIME.fullmatch(value.text))
        if timed and _duration_given(run.outcome.reason or "", texts, first, value):
            continue
        rank = (not timed, first)  # (a figure or an address before a time of day)
        if best is None or rank > best[0]:
            best = (rank, value, where.group())
    if best is None:
        return None
    return Made(best[0][1], best[1], best[2], texts)


# a duration: "120 minutes", "1.5 hours", "90 min"
_DURATION = re.compile(r"(?i)(?<![\w.,:])(\d+(?:\.\d+)?)\s?(?:minutes?|mins?|hours?|hrs?)\b")


def _duration_given(reason: str, texts: _Texts, first: int, value: _Value) -> bool:
    """Whether the wrong time is a time the run held before it was made plus a
    duration the failure names and does not give as the wanted one (an exam that
    "ends at 10:30 (120 minutes)": 08:30 and the 120 a supervisor passed on, from
    which the scheduler computed the end): the time was made right from a wrong
    input given to it."""
    made = _minutes(_TIME.fullmatch(value.text))
    if made is None:
        return False
    spans = [
        round(
            float(m.group(1))
            * (60 if m.group(0).lower().rstrip("s").endswith(("hour", "hr")) else 1)
        )
        for m in _DURATION.finditer(reason)
        if not _wanted_here(reason, m.start())
    ]
    if not spans:
        return False
    before = texts.text[: texts.starts[first]]
    held = {_minutes(m) for m in _TIME.finditer(before)}
    return any((made - span) % 1440 in held for span in spans)


def _minutes(m: re.Match[str] | None) -> int | None:
    """A time of day matched by ``_TIME`` as minutes after midnight."""
    if m is None:
        return None
    hour, minute, half = int(m.group(1)), int(m.group(2)), m.group(3)
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half in "Pp" else 0)
    return hour * 60 + minute if hour < 24 else None


def _built_from(address: str, before: str) -> bool:
    """Whether an address's name is made of words the run held before (a name given)."""
    words = [w for w in re.split(r"[^a-z]+", address.split("@")[0].lower()) if len(w) >= 3]
    low = before.lower()
    return bool(words) and all(re.search(rf"\b{w}\b", low) for w in words)


def _finding(event: AgentEvent, value: str, computed: bool, named: str = "") -> Finding:
    agent = event.agent_name
    what = "its update" if event.type is EventType.AGENT_END else "the arguments of its call"
    timed = bool(_TIME.fullmatch(named))
    said = f"{value!r}" if not named or named == value else f"{value!r} (the failure's {named!r})"
    if computed:
        mode = "reflection.flawed_reasoning"
        how = "made it from what it was given (which may itself be wrong)"
        ways = "time zones, an offset's sign, the clock" if timed else "units, rounding, weighting"
        fix = (
            f"At step {event.step_index}, {agent}: the step's code made {value!r}, which the "
            f"failure names; check how it computes it from its input ({ways}) and whether "
            "that input is right."
        )
    else:
        mode = "memory.wrong_recall"
        how = "took it from outside this run (a default, a cache, an earlier run)"
        fix = (
            f"At step {event.step_index}, {agent}: the step's code produced {value!r}, which "
            "nothing in this run gave it; find where it keeps values between runs (a mutable "
            "default argument, a module-level cache) and start each run clean."
        )
    return rule_finding(
        RULE,
        mode,
        event,
        f"{said}, which the failure names, is first held by {what} at step "
        f"{event.step_index}, a step that called no model and was given nothing holding it: "
        f"its own code {how}",
        confidence=0.5,
        evidence=[quoted(event, "input" if event.type is EventType.TOOL_CALL else "output", value)],
        metadata={"fix": fix, "value": value},
    )
