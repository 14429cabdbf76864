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
not "X300"), its only identifier of those letters (not a table of years, FY20 to
FY25, nor a page of invoices), and does not hold the named one in any case or with
any separator ("x200", "X-200"); and no later lookup (a tool, a retrieval, a node's
own code; not a model's reply) fetched the named one. The first such step is blamed
(``observation.poor_retrieval``: it fetched the wrong record; a lookup matching by
prefix, or a number cut). A result longer than ``_READ`` characters is not read (the
named record may be past what is read); one that echoes the query ("Results for
X200: ...") reads as holding the named record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.lost import failure_values
from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "namesake_fetched"
_READ = 200_000  # characters of an event read (a longer one is not read: the rest may hold it)
# an identifier: letters, maybe a separator, digits ("X200", "SKU-1042", "x 200")
_ID = re.compile(r"(?<![\w-])([A-Za-z]{1,8})[-_ ]?(\d{2,12})(?![\w-])")
_FETCHED = frozenset({EventType.AGENT_END, EventType.TOOL_RESULT, EventType.MEMORY_READ})

_Id = tuple[str, str]  # (letters lowered, digits)


def rule_namesake_fetched(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that returned the record of an identifier's namesake."""
    run = ctx.trajectory
    named = {
        (m.group(1).lower(), m.group(2))
        for v, _ in failure_values(run)
        if not v[:1].isdigit() and (m := _ID.fullmatch(v))
    }
    if not named:
        return
    events = run.events
    runs = NodeRuns(events)
    held: list[dict[_Id, str]] = []  # each event's identifiers (as written)
    for e in events:
        held.append({**_ids(e.input), **_ids(e.output)})
    fetched = [
        i
        for i, e in enumerate(events)
        if e.type in _FETCHED and (e.type is not EventType.AGENT_END or runs.started(e, i))
    ]
    # the steps that look up: a tool, a retrieval, a node whose own code ran (not a
    # model's reply, which may name the id without having fetched anything)
    looked_up = [
        i
        for i in fetched
        if events[i].type is not EventType.AGENT_END or runs.plain_until(events[i], i)
    ]
    for i in fetched:
        e = events[i]
        out = _ids(e.output)
        if out is None:
            continue  # (too long to read whole)
        for wanted in sorted(named):
            if wanted in out or not any(wanted in h for h in held[:i]):
                continue  # (it has the very record; or nothing held the id before it)
            kin = [k for k in out if k[0] == wanted[0]]
            if len(kin) != 1 or not _namesakes(kin[0][1], wanted[1]):
                continue  # (no namesake; or a list, a table, a page of many ids)
            if any(wanted in _ids(events[j].output) for j in looked_up if j > i):
                continue  # (the run fetched the right record after)
            yield _finding(e, f"{wanted[0]}{wanted[1]}", out[kin[0]], _said(wanted, held[:i]))
            return


def _ids(payload: object) -> dict[_Id, str]:
    """The identifiers a payload's text holds, by their letters (lowered) and digits,
    as written; an empty one for none, and for a text too long to read whole."""
    if payload is None:
        return {}
    text = compact_json(payload)
    if len(text) > _READ:
        return {}
    return {(m.group(1).lower(), m.group(2)): m.group() for m in _ID.finditer(text)}


def _namesakes(mine: str, digits: str) -> bool:
    """Whether two identifiers' digits differ by digits left off or added."""
    return mine != digits and (mine.startswith(digits) or digits.startswith(mine))


def _said(wanted: _Id, before: list[dict[_Id, str]]) -> str:
    """The named identifier as the run first wrote it."""
    return next((h[wanted] for h in before if wanted in h), f"{wanted[0]}{wanted[1]}")


def _finding(event: AgentEvent, named: str, other: str, written: str) -> Finding:
    step = event.step_index
    who = event.agent_name or str(event.metadata.get("tool_name") or event.module or "the tool")
    what = "its update" if event.type is EventType.AGENT_END else "its result"
    fix = (
        f"At step {step}, {who}: it returned the record of {other!r} for {written!r}; match "
        f"the identifier exactly (a lookup by prefix, or a number cut short, finds "
        f"{other!r} first)."
    )
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        event,
        f"{written!r}, which the failure names, was in the run before step {step}, and "
        f"{what} there holds {other!r}, its only identifier of the kind, not {written!r}: "
        "it fetched a namesake's record, and no step after it fetched the right one",
        confidence=0.55,
        evidence=[quoted(event, "output", other)],
        metadata={"fix": fix, "value": other},
    )
