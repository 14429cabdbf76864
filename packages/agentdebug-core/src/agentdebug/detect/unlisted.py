"""A listing that left out the record the failure names, which the run never saw.

A collections agent's ``list_overdue_invoices`` tool walks the billing API's pages
with ``range(2, pages)`` and never fetches the last one: it lists eight invoices, the
ninth (INV-24251, $8,400) is not among them, and the statement the model sends, and
the total it reports, are faithful to the eight. The run fails far from the tool
("INV-24251 isn't on it"), and without this rule the free tier guessed: nothing in
the run ever held the missing invoice, so no rule could say who lost it.

The rule keeps to what it can read for certain, in a failed run: an identifier the
failure (its reason, or the reference answer) names (two letters or more and digits,
"INV-24251", "SKU-1042"; not a period's, a version's or a part's, "FY2025", "v12",
nor digits that are a year), not as one the run was to make (no word of making in
the ``_BEFORE`` characters before it: "expected the new ticket TCK-1044"), that no
event of the run holds, in any case or with a dash, an underscore or a space, nor
its digits alone (four or more: "invoice #24251"), nor the run's goal; and a step
before which nothing held identifiers of its kind (the same letters, as many digits)
that returned two or more of them (a tool's result, a retrieval, a node's update
made by its own code; not the user's input, whose list is the user's, nor a model's
reply, which had it from somewhere). The first such listing is blamed
(``observation.poor_retrieval``: a page not read, a filter's bound, a limit).
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

RULE = "named_record_unlisted"
_READ = 1_000_000  # characters of an event read (a longer one is not read: it may hold it)
_ID = re.compile(r"(?<![\w-])([A-Za-z]{1,8})([-_ ]?)(\d{2,12})(?![\w-])")
_LISTERS = frozenset({EventType.TOOL_RESULT, EventType.MEMORY_READ, EventType.AGENT_END})
_NUMBER = re.compile(r"(?<!\d)\d+(?!\d)")
# letters of an identifier that is not a record's: a period's, a version's, a part's
_NOT_RECORDS = frozenset(
    [
        "fy",
        "cy",
        "ytd",
        "qtr",
        "ver",
        "rev",
        "vol",
        "ch",
        "sec",
        "pg",
        "page",
        "no",
        "nr",
        "part",
        "step",
        "stage",
        "phase",
    ]
)
_BEFORE = 40  # characters before an identifier the failure's words of making are read in
_MAKING = re.compile(r"(?i)\b(?:new|create[ds]?|creating|opened|generated?|assigned|next)\b")

_Kind = tuple[str, int]  # (letters lowered, how many digits)


def rule_named_record_unlisted(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's first listing of the kind of record the failure names, which
    left that record out and which nothing in the run ever held."""
    run = ctx.trajectory
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    named: dict[_Kind, tuple[str, str]] = {}  # its kind -> (as written, bare)
    for value, _ in failure_values(run):
        m = _ID.fullmatch(value)
        if m is None or value[:1].isdigit() or not _record_id(m):
            continue
        if _to_make(reason, value):
            continue  # (one the run was to make: "expected the new ticket TCK-1044")
        kind = (m.group(1).lower(), len(m.group(3)))
        named.setdefault(kind, (value, m.group(1).lower() + m.group(3)))
    if not named:
        return
    events = run.events
    texts = [f"{compact_json(e.input)} {compact_json(e.output)}" for e in events]
    if any(len(t) > _READ for t in texts):
        return  # (an event too long to read whole may hold it)
    whole = _bare(" ".join([run.goal or "", *texts]))
    numbers = set(_NUMBER.findall(" ".join([run.goal or "", *texts])))
    runs = NodeRuns(events)
    for kind, (written, bare) in sorted(named.items()):
        digits = bare[len(kind[0]) :]
        if bare in whole or (len(digits) >= 4 and digits in numbers):
            continue  # (the run held it, written so or another way: "invoice #24251")
        for i, event in enumerate(events):
            ids = _ids(texts[i], kind)
            if not ids:
                continue
            # (the first event that holds any of its kind: where they came from)
            if len(ids) < 2 or event.type not in _LISTERS:
                break
            if event.type is EventType.AGENT_END and (
                event.agent_name in runs.outer or not runs.plain_until(event, i)
            ):
                break  # (a model's, or a subgraph's echo)
            yield _finding(event, written, sorted(ids))
            return


def _record_id(m: re.Match[str]) -> bool:
    """Whether an identifier reads as a record's: letters of two or more that are
    not a period's, a version's or a section's ("FY2025", "Q3", "v12", "ch10"),
    and digits that are not a year."""
    letters, digits = m.group(1).lower(), m.group(3)
    year = len(digits) == 4 and 1900 <= int(digits) <= 2100
    return len(letters) >= 2 and letters not in _NOT_RECORDS and not year


def _to_make(reason: str, value: str) -> bool:
    """Whether the failure says the identifier was one to make, not one to find
    (a word of making in the ``_BEFORE`` characters before it)."""
    at = reason.find(value)
    return at >= 0 and _MAKING.search(reason[max(0, at - _BEFORE) : at]) is not None


def _ids(text: str, kind: _Kind) -> set[str]:
    """The identifiers of a kind a text holds, as written."""
    return {
        m.group()
        for m in _ID.finditer(text)
        if m.group(1).lower() == kind[0] and len(m.group(3)) == kind[1]
    }


def _bare(text: str) -> str:
    """A text lowered, its identifiers written without separators ("inv24251")."""
    return _ID.sub(lambda m: m.group(1) + m.group(3), text).lower()


def _finding(event: AgentEvent, named: str, listed: list[str]) -> Finding:
    step = event.step_index
    who = event.agent_name or str(event.metadata.get("tool_name") or "the lookup")
    shown = (
        f"{listed[0]!r} to {listed[-1]!r}" if len(listed) > 2 else " and ".join(map(repr, listed))
    )
    fix = (
        f"At step {step}, {who}: it listed {len(listed)} of {named!r}'s kind and not "
        f"{named!r}; check how it gathers them (every page read, a filter's bounds, a "
        "limit)."
    )
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        event,
        f"{named!r}, which the failure names, is nowhere in the run; {who} at step {step} "
        f"listed {len(listed)} of its kind ({shown}), the first step to hold any, and not "
        "it: every step after worked from a listing that left it out",
        confidence=0.45,
        evidence=[quoted(event, "output", listed[0])],
        metadata={"fix": fix, "value": named},
    )
