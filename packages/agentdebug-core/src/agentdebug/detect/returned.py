"""A lookup asked for one key's record that returned another key's.

A benefits portal's ``get_fsa_account`` task keeps a small cache to save calls to the
provider, keyed by employer and plan year but not by the employee: Raj, second that
morning, is served Hana's account (``employee_id: "E-1182"`` for ``"E-2075"``), the
claim is approved against her balance and the reply quotes it. The run fails at the
reply ("told his claim is approved ... his FSA only had $240 available"), every step
after the lookup worked faithfully, and without this rule the free tier guessed.

The rule keeps to what it can read for certain, in a failed run: a lookup whose
request and result are both recorded (a tool's call and its result; a node run
given an input, a functional API task's arguments or a ``Send``'s packet, and its
update), whose name does not say it returns another record (``get_manager``,
``find_substitute``, ``clone_ticket``: ``_RELATED``), where the request gives an
identifier under a key that names one (its last word ``id``, ``sku``, ``number``,
``no``, ``code``: ``employee_id``, ``orderId``; not a key with a word of a request's,
a page's, a trace's or a parent's, ``next_page_id``, ``request_id``) and the result
is one record (a mapping, also as JSON text, or the one mapping under a single key)
holding the same key with another identifier, not the asked one written another
way ("E2075", "e-2075", 88124 for "ORD-88124", "000123" for 123: the same digits).
A result listing several records (a search's) is not read. No lookup after it
returned the asked one. The first such lookup is blamed
(``observation.poor_retrieval``: a cache keyed without the identifier, a stale
index, a wrong join), with confidence 0.5 when the failure names either identifier,
else 0.3 (a weak sign: a lookup may return another record under the key by design,
which its name does not say).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.invented import call_of
from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

log = logging.getLogger("agentdebug.detect")

RULE = "other_record_returned"
_READ = 200_000  # characters of a result's JSON text read
# the last word of a key that names a record's identifier ("employee_id", "orderId",
# "sku", "account_number"), its words split at separators and at a capital
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_ID_WORDS = frozenset({"id", "sku", "number", "no", "num", "code"})
# words of a key whose identifier is not the record's own: a request's, a page's, a
# trace's, a parent's (its words split as _WORDS splits them)
_NOT_OWN = frozenset(
    [
        "request",
        "trace",
        "span",
        "session",
        "cursor",
        "token",
        "page",
        "next",
        "prev",
        "previous",
        "version",
        "etag",
        "idempotency",
        "correlation",
        "parent",
        "zip",
        "postal",
        "phone",
        "status",
    ]
)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-./:]{0,63}")


# words of a lookup's name that say it returns another record than the one it is given
_RELATED = frozenset(
    [
        "manager",
        "managers",
        "parent",
        "parents",
        "child",
        "children",
        "substitute",
        "substitutes",
        "alternative",
        "alternatives",
        "similar",
        "related",
        "replacement",
        "replacements",
        "clone",
        "copy",
        "duplicate",
        "create",
        "new",
        "next",
        "previous",
        "successor",
        "predecessor",
        "follow",
        "followup",
        "recommend",
        "recommendations",
        "owner",
        "owners",
        "reports",
        "sibling",
        "siblings",
        "variant",
        "variants",
        "merge",
        "split",
    ]
)


def rule_other_record_returned(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's lookup that returned another identifier's record than asked."""
    finding = returned(ctx)
    if finding is not None:
        yield finding


def returned(ctx: RuleContext) -> Finding | None:
    """The finding, read once per run (:mod:`.lost` leaves the identifier asked, and
    the one returned, to it; a fault of this reading costs it nothing: it is logged,
    and there is no finding)."""
    return ctx.once(RULE, lambda: _safely(ctx))


def _safely(ctx: RuleContext) -> Finding | None:
    try:
        return _returned(ctx)
    except Exception:
        log.exception("agentdebug: rule %s failed on run %s", RULE, ctx.trajectory.id)
        return None


def explains(finding: Finding | None, value: str) -> bool:
    """Whether ``value`` is the identifier a finding of this rule says was asked or
    returned."""
    return finding is not None and any(
        _same(value, finding.metadata.get(k, "")) for k in ("value", "wanted")
    )


def _returned(ctx: RuleContext) -> Finding | None:
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    events = run.events
    runs = NodeRuns(events)
    lookups = list(_lookups(ctx, runs))
    # (key, identifier) -> the last lookup that returned it when asked for it
    right: dict[tuple[str, str], int] = {}
    for n, (_, asked, got) in enumerate(lookups):
        for key, wanted in asked.items():
            value = got.get(key)
            if value is not None and _same(value, wanted):
                right[(key, _bare(wanted))] = n
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    said = _bare_words(reason)
    for n, (i, asked, got) in enumerate(lookups):
        for key, wanted in asked.items():
            value = got.get(key)
            if value is None or _same(value, wanted) or not _identifier(value):
                continue
            if right.get((key, _bare(wanted)), -1) > n:
                continue  # (a lookup after it returned the asked record)
            # (a lookup may rightly return another id under the key, a manager's, a
            # substitute's: without the failure naming either, a weak sign)
            named = _bare(wanted) in said or _bare(value) in said
            return _finding(events[i], key, wanted, value, 0.5 if named else 0.3)
    return None


def _lookups(
    ctx: RuleContext, runs: NodeRuns
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """The run's lookups: (the result's index, the identifiers asked by key, the
    record returned)."""
    events = ctx.trajectory.events
    for i, event in enumerate(events):
        if event.type is EventType.TOOL_RESULT:
            call = call_of(ctx, event)
            given = call.input if call is not None else None
        elif event.type is EventType.AGENT_END and event.agent_name not in runs.outer:
            start = runs.start_of(event)
            given = events[start].input if start is not None else None
        else:
            continue
        name = tool_name(event) or event.agent_name or ""
        if any(w.casefold() in _RELATED for w in _WORDS.findall(name)):
            continue  # (a lookup that returns another record by design: a manager's)
        asked = _asked(given)
        if not asked:
            continue
        got = _record(event.output)
        if got is not None:
            yield i, asked, got


def _asked(given: Any) -> dict[str, Any]:
    """The identifiers a request gives, by key."""
    if not isinstance(given, dict):
        return {}
    return {
        k: v
        for k, v in given.items()
        if isinstance(k, str)
        and _names_id(k)
        and not any(w.casefold() in _NOT_OWN for w in _WORDS.findall(k))
        and _identifier(v)
    }


def _names_id(key: str) -> bool:
    """Whether a key names a record's identifier: its last word does."""
    words = _WORDS.findall(key)
    return bool(words) and words[-1].casefold() in _ID_WORDS


def _record(output: Any) -> dict[str, Any] | None:
    """The one record a result holds: a mapping (also as JSON text), or the one
    mapping under a single key ``{"account": {...}}``; None for anything else (a list
    of records, a text)."""
    if isinstance(output, str):
        text = output.strip()
        if not text.startswith("{") or len(text) > _READ:
            return None
        try:
            output = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(output, dict):
        return None
    if len(output) == 1:
        (inner,) = output.values()
        if isinstance(inner, dict):
            return inner
    return output


def _identifier(value: Any) -> bool:
    """A value that reads as an identifier: a whole number of three digits or more,
    or a word of letters, digits and separators with a digit in it."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 100
    return (
        isinstance(value, str)
        and _ID.fullmatch(value) is not None
        and any(c.isdigit() for c in value)
    )


def _same(one: Any, other: Any) -> bool:
    """Whether two identifiers are one, written alike or not ("E-2075", "e2075",
    88124 and "ORD-88124", "000123" and 123: the same digits)."""
    if _bare(one) == _bare(other):
        return True
    digits = _digits(one)
    return bool(digits) and digits == _digits(other)


def _bare(value: Any) -> str:
    return re.sub(r"[\W_]", "", str(value)).casefold()


def _digits(value: Any) -> str:
    return "".join(c for c in str(value) if c.isdigit()).lstrip("0")


def _bare_words(text: str) -> set[str]:
    """A text's words, each as :func:`_bare` writes an identifier ("E-2075": "e2075")."""
    return {_bare(w) for w in re.findall(r"[\w][\w\-./:]*", text)}


def _finding(event: AgentEvent, key: str, wanted: Any, got: Any, confidence: float) -> Finding:
    step = event.step_index
    who = event.agent_name or str(event.metadata.get("tool_name") or "the lookup")
    what = "its update" if event.type is EventType.AGENT_END else "its result"
    fix = (
        f"At step {step}, {who}: it returned the record of {key} {got!r} when asked for "
        f"{wanted!r}; check its lookup (a cache keyed without the {key}, a stale index, "
        "a wrong join)."
    )
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        event,
        f"{who} at step {step} was asked for {key} {wanted!r}, and {what} is the record "
        f"of {key} {got!r}: another's, which no lookup after it replaced",
        confidence=confidence,
        evidence=[quoted(event, "output", f"{key}: {got}")],
        metadata={"fix": fix, "value": str(got), "wanted": str(wanted)},
    )
