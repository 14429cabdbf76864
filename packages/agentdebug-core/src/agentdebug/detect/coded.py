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

The rule keeps to what it can read for certain, in a failed run that says what
went wrong (the success check's reason, or the reference answer): a value the
reason names (a number of three digits or more, or with a decimal part, "3.83",
"12,800,000", not a year; or an e-mail address), not one the reason gives as the
expected one ("expected 6.6", "should be", "instead of"), whose first holder in the
run is a node's update or a tool call's arguments made by a node run in which no
model was called (so neither a model's reply, a tool's result, the run's input or
configuration, nor anything else before it held the value, in any of its forms:
"12,800,000" is "12800000", and "3.83" is held by "3.8333"), and that the run then
acted on or ended with (the step's own tool call, a later tool call, or the run's
last word holds it). A number is ``reflection.flawed_reasoning`` (code that
computed it wrong: a unit, an average, a rounding); an address is
``memory.wrong_recall`` (a value of another task: a default or a cache that kept
it). Of several such values, the one made last is blamed (a right value is given
or made before the step that went wrong with it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.lost import wanted_values
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "value_made_in_code"
MOST_VALUES = 12  # values of a failure's reason looked for
_READ = 100_000  # characters of an event read
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.REASONING})
_MADE = frozenset({EventType.AGENT_END, EventType.TOOL_CALL})
_LAST_WORD = frozenset({EventType.AGENT_END, EventType.FINAL_ANSWER, *_MODEL, EventType.MESSAGE})
# a number with a decimal part (the lost-value reader takes three digits or more)
_DECIMAL = re.compile(r"(?<![\w.,])(\d{1,2})\.(\d+)(?![\d.,]\d|\w)")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+")
# the reason giving the value that was wanted, just before it
_EXPECTED = re.compile(
    r"(?i:\b(?:expected|should(?: have)?(?: be| been)?|instead of|rather than|correct|"
    r"actual(?:ly)?|real|true|approved|wanted|not)\b[^.;,]{0,24})$"
)


def _expected(reason: str, at: int) -> bool:
    """Whether the words just before ``at`` give the value there as the wanted one."""
    return bool(_EXPECTED.search(reason[max(0, at - 40) : at]))


def _named(reason: str) -> list[tuple[str, re.Pattern[str], bool, bool]]:
    """The values ``reason`` names: (as written, a pattern finding any of its forms,
    whether it is a number, whether it may be a wrong one the run made: not one the
    reason gives as the wanted one, nor a number of two digits, "90.0", which is
    looked for only as a wanted one)."""
    found: list[tuple[str, re.Pattern[str], bool, bool]] = []
    for m in _DECIMAL.finditer(reason):
        whole, decimals = m.group(1), m.group(2).rstrip("0")
        value = f"{whole}.{decimals}" if decimals else whole
        tail = rf"\.{decimals}\d*" if decimals else r"(?:\.0+)?"
        pattern = re.compile(rf"(?<![\w.,]){whole}{tail}(?![\d.,]\d)")
        found.append((value, pattern, True, bool(decimals) and not _expected(reason, m.start())))
    for value, pattern in wanted_values(reason):
        at = pattern.search(reason)
        if value[:1].isdigit():
            found.append((value, pattern, True, not (at and _expected(reason, at.start()))))
    for m in _EMAIL.finditer(reason):
        value = m.group().rstrip(".")
        pattern = re.compile(rf"(?i)(?<![\w.+-]){re.escape(value)}(?![\w-]|\.\w)")
        found.append((value, pattern, False, not _expected(reason, m.start())))
    return found[:MOST_VALUES]


def rule_value_made_in_code(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's wrong value whose first holder is a step with no model in it."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    named = _named(reason)
    if not named:
        return
    events = run.events
    texts = [f"{flatten(e.input, _READ)}\n{flatten(e.output, _READ)}" for e in events]
    own = f"{flatten(run.metadata, _READ)} {run.goal or ''}"
    # node runs (an agent at a step) that called a model: their values may be its
    modelled = {(e.agent_name, e.step_index) for e in events if e.type in _MODEL}
    last_word = max((i for i, e in enumerate(events) if e.type in _LAST_WORD), default=-1)
    best: tuple[int, str, bool] | None = None  # (where made, value as held, a number)
    for value, pattern, number, wrong in named:
        if not wrong or pattern.search(own):
            continue  # (a wanted value; or the run's own input or configuration)
        first = next((i for i, text in enumerate(texts) if pattern.search(text)), None)
        if first is None:
            continue  # (the run never held it: the value wanted, not the one made)
        made = events[first]
        if (
            made.type not in _MADE
            or not made.agent_name
            or (made.agent_name, made.step_index) in modelled
            or not pattern.search(flatten(made.input if made.type is EventType.TOOL_CALL
                                          else made.output, _READ))
        ):  # fmt: skip
            continue
        # where the run acted on it (the step's own call, a later one) or ended with it
        acted = first if made.type is EventType.TOOL_CALL else next(
            (
                i
                for i in range(first + 1, len(events))
                if (events[i].type is EventType.TOOL_CALL and pattern.search(texts[i]))
                or (i == last_word and pattern.search(flatten(events[i].output, _READ)))
            ),
            None,
        )  # fmt: skip
        if acted is None:
            continue
        if any(  # another value the failure names was at hand when this one was used:
            other.search(texts[i])  # the use chose the wrong one, not its maker
            for v, other, _, _ in named
            if v != value
            for i in range(first + 1, acted)
        ):
            continue
        if best is None or first > best[0]:
            held = pattern.search(texts[first])
            best = (first, held.group() if held else value, number)
    if best is not None:
        at, value, number = best
        yield _finding(events[at], value, number)


def _finding(event: AgentEvent, value: str, number: bool) -> Finding:
    agent = event.agent_name
    what = "its update" if event.type is EventType.AGENT_END else "the arguments of its call"
    if number:
        mode = "reflection.flawed_reasoning"
        how = "made it from what it was given (which may itself be wrong)"
        fix = (
            f"At step {event.step_index}, {agent}: the step's code made {value!r}, which the "
            "failure names; check how it computes it from its input (units, rounding, "
            "weighting) and whether that input is right."
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
        f"{value!r}, which the failure names, is first held by {what} at step "
        f"{event.step_index}, a step that called no model and was given nothing holding it: "
        f"its own code {how}",
        confidence=0.5,
        evidence=[quoted(event, "input" if event.type is EventType.TOOL_CALL else "output", value)],
        metadata={"fix": fix, "value": value},
    )
