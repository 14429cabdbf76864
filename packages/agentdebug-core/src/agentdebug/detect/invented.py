"""A final answer whose figure no tool gave, after the lookup that was to give it failed.

An agent asked for "the nightly rate of the Oslo Grand" calls the rate tool with
the hotel the task named; the tool fails; the agent answers "$180 a night" all the
same. The call was the right one (its arguments are the task's own words), so
blaming it and saying "retry" leaves the fault in place: the agent invented the
figure instead of saying the lookup failed (``reflection.hallucinated_fact``).

Without a model, an invented figure is told apart from a computed one by where its
number could have come from: the rule keeps to a failed run whose last tool result
before the answer found nothing, or failed the way the world fails (a timeout, a
service down, a refusal, a record not found: not a call's own error, such as an
argument the tool rejects, where the call is the likelier cause) and was never got
past; whose call, where it failed, took only values the task gave (each as a
whole word of it: a call that found nothing, where no tool result before it held
a number, is no fault to cover, whatever its arguments, and the answer is the
only fault in sight); and
whose answer does not admit the failure ("unavailable", "try again", "sorry"...)
and gives a number (two digits or more) that nothing before the answering step
held: not one of those numbers rounded or scaled ("1.2 million" for 1,200,000,
"about $42" for 41.96), nor the sum, difference, product or quotient of two of
the first ``PAIRED``. The finding is the answer's; for a final answer no agent
gave (a graph's final state), the model call's that wrote the figure.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from agentdebug.detect.misread import QUOTE, failed_answer, held, numbers
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import ENVIRONMENT_MODES, ERROR_ACK, RESULT_TYPES, tool_name
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "invented_after_failure"
COVERS = "covers"  # the finding's metadata: the failed result the answer papered over
CURRENCY = "$€£¥"  # said with the figure, when written before it
_EMPTY_TEXTS = frozenset({"", "null", "None", "[]", "{}"})
_NOTHING = re.compile(
    r"^(?:no (?:results?|matches|records?|items?|data)(?: found)?|nothing found|0 results)\.?$",
    re.I,
)
PAIRED = 60  # earlier numbers tried in pairs (sum, difference, product, quotient)
_SCALES = (1, 100, 1e3, 1e6, 1e9, 0.01)  # a number said in percent, thousands, millions...
TRIED = 20  # numbers of the answer looked at, first first
# failures of the world the call reached (its decision not at fault), besides
# ENVIRONMENT_MODES: the tool looked and found no such record
_LOOKED = frozenset({"system.resource_not_found"})
# a lookup that found nothing, in a tool's own words: "no total available for order
# A1", "could not find order A1" (a tool error otherwise: "No API key found" is not
# a lookup of the task's, and its call's arguments are then not the task's either)
_NOTHING_FOR = re.compile(
    r"\bno (?:\w+ ){1,3}(?:available|found) for\b|"
    r"\b(?:could not|couldn't|cannot|can't|unable to) (?:find|locate)\b",
    re.I,
)
# an answer that says it could not get the figure, beside ERROR_ACK's words
HONEST = re.compile(
    r"\b(?:unavailable|not available|(?:is|are|isn't|aren't|wasn't|weren't) available|"
    r"timed? ?out|try again|sorry|apolog\w+|(?:do not|don't|does not|doesn't|did not|"
    r"didn't) (?:have|know)|no (?:data|information|record)|(?:is|was|are|were) down|"
    r"unknown|not sure|unsure)\b",
    re.I,
)


def leaves(value: Any) -> Iterator[str]:
    """The scalar values of a call's arguments, as text."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _empty(output: Any) -> bool:
    """A result that holds nothing: an empty list, object or text, ``null``, or a
    short "no results" (a search that found nothing; not a failure)."""
    if output is None:
        return True
    if isinstance(output, (list, dict)):
        return not output
    if isinstance(output, str):
        text = output.strip()
        if text in _EMPTY_TEXTS:
            return True
        try:
            parsed = json.loads(text)
        except ValueError:
            return bool(_NOTHING.match(text))
        return isinstance(parsed, (list, dict)) and not parsed
    return False


def from_task(call: AgentEvent, task: str) -> bool:
    """Every argument of ``call`` is written in the task, as a whole word or phrase
    ("A123" is not in "A1234", nor "5" in "2025"): nothing the agent made up."""
    values = [leaf.strip() for leaf in leaves(call.input)]
    return bool(values) and all(
        leaf and re.search(rf"(?<!\w){re.escape(leaf)}(?!\w)", task, re.I) for leaf in values
    )


def _near(target: float, got: float) -> bool:
    return abs(got - target) <= 0.005 * max(1.0, abs(target))


def derived(value: str, held: list[float]) -> bool:
    """``value`` is a number held, rounded or scaled, or the sum, difference, product
    or quotient of two of the first ``PAIRED``."""
    target = float(value)
    for a in held:
        if any(_near(target, a / scale) for scale in _SCALES) or round(a) == target:
            return True
    for a, b in itertools.combinations_with_replacement(held[:PAIRED], 2):
        for got in (a + b, abs(a - b), a * b, a / b if b else None, b / a if a else None):
            if got is not None and _near(target, got):
                return True
    return False


def said_by(events: list[AgentEvent], at: int, answer: AgentEvent, figure: str) -> AgentEvent:
    """Where the answer's figure was said: the answer, when an agent gave it; for a
    final answer no agent gave (a graph's final state), the latest model call up to
    it whose output holds the figure (the node that wrote it), else the answer."""
    if answer.agent_name is not None:
        return answer
    for event in reversed(events[:at]):
        if (
            event.type in (EventType.LLM_RESPONSE, EventType.LLM_CALL)
            and event.agent_name
            and figure in flatten(event.output, limit=8000)
        ):
            return event
    return answer


def call_of(ctx: RuleContext, result: AgentEvent) -> AgentEvent | None:
    """The tool call ``result`` answers: its parent, or the latest call of its tool."""
    events = ctx.trajectory.events
    at = ctx.position[result.id]
    parent = next(
        (e for e in events[max(0, at - 64) : at] if e.id == result.parent_id),
        None,
    )
    if parent is not None and parent.type is EventType.TOOL_CALL:
        return parent
    name = tool_name(result)
    return next(
        (
            e
            for e in reversed(events[max(0, at - 64) : at])
            if e.type is EventType.TOOL_CALL and tool_name(e) == name
        ),
        None,
    )


def unhedged_answer(
    trajectory: AgentTrajectory,
) -> tuple[int, AgentEvent, str, list[AgentEvent]] | None:
    """A failed run's final answer that does not say it could not tell (``ERROR_ACK``
    and ``HONEST`` words): its position, it, its text, and the events of the steps
    before its own."""
    found = failed_answer(trajectory)
    if found is None:
        return None
    at, answer = found
    text = flatten(answer.output, limit=4000)
    if ERROR_ACK.search(text) or HONEST.search(text):
        return None  # (it says the lookup failed, or that it could not tell)
    return at, answer, text, [e for e in trajectory.events[:at] if e.step_index < answer.step_index]


class FiguresHeld(NamedTuple):
    """Numbers a run held, as written values and as floats (smallest first)."""

    values: set[str]
    floats: list[float]

    def new(self, value: str, named: Collection[str] = ()) -> bool:
        """``value`` (two digits or more) is none of these, nor made of them (a value
        the failure's reason ``named`` may be made of them by chance: 20 is 30 - 10)."""
        return (
            len(value.replace(".", "").lstrip("0")) >= 2
            and value not in self.values
            and (value in named or not derived(value, self.floats))
        )


def figures_before(trajectory: AgentTrajectory, before: list[AgentEvent]) -> FiguresHeld:
    """The numbers the task and the steps ``before`` held."""
    earlier = held(trajectory.goal or "")
    for event in before:
        earlier |= held(flatten(event.input, limit=4000) + " " + flatten(event.output, limit=4000))
    return FiguresHeld(earlier, sorted({float(v) for v in earlier}, key=abs))


_BETWEEN = RESULT_TYPES | {EventType.TOOL_CALL, EventType.AGENT_START, EventType.AGENT_END}


def _last_batch(ctx: RuleContext, before: list[AgentEvent]) -> list[AgentEvent]:
    """The last tool results before the final answer: the last one's, with those of
    the other calls the same model answer asked for at once (no answer, message or
    plan between; each call linked to the answer that asked for it)."""
    results = [e for e in before if e.type in RESULT_TYPES and tool_name(e)]
    if not results:
        return []
    last = call_of(ctx, results[-1])
    asker = last.parent_id if last is not None else None
    out: list[AgentEvent] = []
    for event in reversed(before):
        if event.type not in _BETWEEN or asker is None:
            break
        if event.type in RESULT_TYPES and tool_name(event):
            call = call_of(ctx, event)
            if call is not None and call.parent_id == asker:
                out.append(event)
    return out[::-1] or results[-1:]


def _total_of_others(value: str, batch: list[AgentEvent], failed: AgentEvent) -> bool:
    """Whether ``value`` is the sum of what the other calls of the batch returned
    (their first figures): a total of what was found ("40 EUR in total" of 10 and
    30), not a figure given for the call that failed."""
    figures = [numbers(flatten(e.output, limit=4000)) for e in batch if e is not failed]
    found = [float(next(iter(f))) for f in figures if f]
    return len(found) >= 2 and _near(float(value), sum(found))


def _lost(ctx: RuleContext, result: AgentEvent, results: list[AgentEvent], task: str) -> bool:
    """Whether ``result`` is a lookup that failed (the service, or nothing found)
    or found nothing, on the task's own arguments, with no retry past it."""
    empty = result.id not in ctx.failures and _empty(result.output)
    if not empty and (
        result.id not in ctx.failures
        or (
            ctx.failures[result.id][0] not in ENVIRONMENT_MODES | _LOOKED
            and not _NOTHING_FOR.search(ctx.failures[result.id][1])
        )
    ):
        return False  # (a call's own error, an argument the tool rejects: the call's fault)
    if ctx.retried.get(result.id) or ctx.recovered.get(result.id):
        return False
    call = call_of(ctx, result)
    # (arguments the agent chose: the call is the likelier cause; a query of its own
    # that found nothing counts where no other tool gave a figure, else the answer's
    # may be made of those)
    return (call is not None and from_task(call, task)) or (
        empty and not any(held(flatten(e.output, limit=4000)) for e in results if e is not result)
    )


def rule_invented_after_failure(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's final answer giving a figure no tool returned, after its last
    lookup (with the task's own arguments) failed and the answer did not say so."""
    trajectory = ctx.trajectory
    found = unhedged_answer(trajectory)
    if found is None:
        return
    at, answer, text, before = found
    events = trajectory.events
    results = [e for e in before if e.type in RESULT_TYPES and tool_name(e)]
    task = trajectory.goal or ""
    batch = _last_batch(ctx, before)
    failed = next((e for e in reversed(batch) if _lost(ctx, e, results, task)), None)
    if failed is None:
        return
    empty = failed.id not in ctx.failures
    earlier = figures_before(trajectory, before)
    named = numbers(trajectory.outcome.reason or "")
    figure = next(
        (
            written
            for value, written in itertools.islice(numbers(text).items(), TRIED)
            if earlier.new(value, () if _total_of_others(value, batch, failed) else named)
        ),
        None,
    )
    if figure is None:
        return
    where = text.find(figure)
    if where > 0 and text[where - 1] in CURRENCY:
        where -= 1
        figure = text[where] + figure
    tool = tool_name(failed) or "the tool"
    if empty:
        error = flatten(failed.output, limit=300) or repr(failed.output)
        how, what = f"returned nothing ({shorten(error, 80)})", "returned nothing"
        instead = "say that nothing was found"
    else:
        error = ctx.failures[failed.id][1]
        how, what = f"failed ({shorten(error, 80)})", "failed"
        instead = "say that the lookup failed"
    answer = said_by(events, at, answer, figure)
    yield rule_finding(
        RULE,
        "reflection.hallucinated_fact",
        answer,
        f"the final answer gives {figure}, which no tool returned: the {tool} call at step "
        f"{failed.step_index} {how} and the answer did not say so",
        confidence=0.8,
        evidence=[
            quoted(
                answer,
                "output",
                text[max(0, where - QUOTE // 2) : where + len(figure) + QUOTE // 2].strip(),
            ),
            quoted(failed, "error" if failed.error else "output", error[:300]),
        ],
        metadata={
            COVERS: failed.id,
            "fix": (
                f"At step {answer.step_index}, {answer.agent_name or 'the agent'}: the answer "
                f"gave {figure}, which no tool returned ({tool} {what} at step "
                f'{failed.step_index}: "{shorten(error, 120)}"). Do not answer with a figure '
                f"no tool gave: get it another way (another tool, other arguments), or "
                f"{instead}."
            ),
        },
    )
