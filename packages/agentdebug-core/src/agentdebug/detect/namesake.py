"""A step that fetched the record of a namesake: X20's manual for an X200.

A support bot's ``retrieve`` node looks the product's manual up by model number
with a prefix match over its index: "X200" matches the "X20" push mower's manual
first, and the answer tells the owner of an X200 riding mower to torque its blade
bolt to the push mower's 18 N·m. The run fails far from the lookup ("told an X200
owner ... 18 N·m"), the answer quoted its excerpt faithfully, and the free tier
blamed the answer.

The rule keeps to what it can read for certain, in a failed run: an identifier the
failure names (a letter and digits, "X200", "SKU-1042"), held by the run before a
step (the user's input, a model's extraction, a tool call's arguments), where the
step (a node's update, a tool's result, a retrieval) returns a record holding an
identifier that is the named one with digits left off or added ("X20", "X2000";
not "X300") and does not hold the named one. The first such step is blamed
(``observation.poor_retrieval``: it fetched the wrong record; a lookup matching by
prefix, or a number cut).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.lost import failure_values
from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import compact_json, flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "namesake_fetched"
_READ = 200_000  # characters of an event read
_ID = re.compile(r"(?<![\w-])([A-Za-z]{1,8}[-_]?)(\d{2,12})(?![\w-])")
_FETCHED = frozenset({EventType.AGENT_END, EventType.TOOL_RESULT, EventType.MEMORY_READ})


def rule_namesake_fetched(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that returned the record of an identifier's namesake."""
    run = ctx.trajectory
    named = [m for v, _ in failure_values(run) if not v[:1].isdigit() and (m := _ID.fullmatch(v))]
    if not named:
        return
    events = run.events
    runs = NodeRuns(events)
    patterns = {m.group(): re.compile(rf"(?<![\w-]){re.escape(m.group())}(?![\w-])") for m in named}
    first: dict[str, int] = {}  # identifier -> the first event holding it
    for i, e in enumerate(events):
        out = _text(e.output)
        if e.type in _FETCHED and (e.type is not EventType.AGENT_END or runs.started(e, i)):
            for m in named:
                wanted = m.group()
                if wanted not in first or patterns[wanted].search(out):
                    continue  # (not asked for before this step; or it has the very record)
                other = _namesake(m, out)
                if other is not None:
                    yield _finding(e, wanted, other)
                    return
        given = f"{_text(e.input)} {out}"
        for wanted, pattern in patterns.items():
            if wanted not in first and pattern.search(given):
                first[wanted] = i


def _text(payload: object) -> str:
    """A payload's text, readable and as JSON (a record's every field)."""
    if payload is None:
        return ""
    return f"{flatten(payload, _READ)} {compact_json(payload)[:_READ]}"


def _namesake(wanted: re.Match[str], text: str) -> str | None:
    """An identifier of ``text`` that is ``wanted`` with digits left off or added."""
    letters, digits = wanted.group(1), wanted.group(2)
    for m in _ID.finditer(text):
        if m.group(1).lower() != letters.lower() or m.group(2) == digits:
            continue
        mine = m.group(2)
        if mine.startswith(digits) or digits.startswith(mine):
            return m.group()
    return None


def _finding(event: AgentEvent, wanted: str, other: str) -> Finding:
    agent, step = event.agent_name or event.type.value, event.step_index
    what = "its update" if event.type is EventType.AGENT_END else "its result"
    fix = (
        f"At step {step}, {agent}: it returned the record of {other!r} for {wanted!r}; match "
        f"the identifier exactly (a lookup by prefix, or a number cut short, finds "
        f"{other!r} first)."
    )
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        event,
        f"{wanted!r}, which the failure names, was asked for before step {step}, and "
        f"{what} there holds {other!r} and not {wanted!r}: it fetched a namesake's record, "
        "which the steps after it used",
        confidence=0.55,
        evidence=[quoted(event, "output", other)],
        metadata={"fix": fix, "value": other},
    )
