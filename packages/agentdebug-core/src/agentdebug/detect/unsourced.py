"""A tool call given an identifier that nothing in the run had given.

A support agent asked to cancel "the kettle I ordered yesterday" looks the customer
up (a profile, no orders in it) and calls ``cancel_order(order_id="ORD-20931")``:
an id in neither the request nor any tool's result. The model made it up; the tool
cancelled another customer's order, and the model said it was done. The call is
the fault (``reflection.hallucinated_fact``: a value stated as known that nothing
in the run supports), not the answer that reported it; the fix is to look the
value up, or ask for it.

The rule keeps to what it can read for certain, in a failed run: an argument of a
tool call that reads as an identifier (letters and three digits or more joined,
"ORD-20931", "INV_1042", "C4410", "TKT-2024-0042"; or, under a key that names one,
``order_id``, ``orderId``, ``account_number``, ``accountNumber``, ``sku``, ``ref``,
a value with three digits or more; or a resource's address, ``s3://...``,
``https://...``, where an event before held one under the same key, given to a
tool that does not write there: the registered artifact a model deployed another
of), first said by a model (its reply's tool
calls or text, its reasoning; or, in a transcript that records no reply beside its
calls, the call itself), with nothing before it holding it (the run's input, a tool's result,
a node's update, a prompt, the run's own instructions), neither as written (any
case) nor by its digits (each group of four digits or more, "20931" for
"ORD-20931", "2024-06-11" for "20240611"); and that matters to the failure: the
failure's reason or reference names it, or the tool acts on what the id names
(``cancel_order``; not a read such as ``get_order``, which finds nothing for a
wrong id). A tool that makes something (``create_ticket``, ``schedule_meeting``)
may be given the new thing's own id (``ticket_id``), not read; an id of another
thing (``create_refund(order_id=...)``) is. Keys a caller mints by design (an
idempotency key, a client's order id, a request or trace id) are not read. The
model call that first said it is blamed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import only_reads, tool_words
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "unsourced_argument"
MOST_CALLS = 200  # tool calls looked at in a run
MOST_VALUES = 50  # identifiers looked for
_READ = 1_000_000  # characters of an event read
# an identifier by its form: letters, then (after a dash or underscore, or none) three
# digits or more, then parts each after a dash or underscore ("TKT-2024-0042"); one
# way to read each, so a near miss ("img20240611screenshot.png") fails at once
_ID = re.compile(r"[A-Za-z]{1,12}[-_]?\d{3,}(?:[-_][A-Za-z0-9]{1,12})*")
# a key that names an identifier: "id", "order_id", "account_number", "sku"; in
# camelCase, "orderId", "accountNumber", "invoiceRef" (not "paid", "bid", "valid")
_ID_KEY = re.compile(
    r"(?i:(?:^|[_-])(?:id|ids|number|no|num|ref|reference|sku|code|account|iban)$|^sku)"
    r"|[a-z](?:Id|Ids|Number|No|Num|Ref|Reference|Code|Sku)$"
)
# keys a caller mints by design: a new value each call, which nothing before holds
_MINTED = re.compile(
    r"idempoten|request[_-]?id|trace|span|nonce|correlation|session|client[_-]?\w*id", re.I
)
_MAKES = frozenset(
    {"create", "add", "new", "insert", "register", "generate", "open", "make", "schedule"}
    | {"start", "begin", "submit", "place", "book", "post", "issue", "send", "log", "file"}
)
_SAYS = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.REASONING})
_GROUPS = re.compile(r"\d{4,}")
# tools that write to the address they are given: a new object's, which nothing holds
_WRITES = frozenset(
    {"write", "save", "export", "upload", "put", "store", "copy", "move", "dump", "publish"}
    | {"archive", "backup", "sync", "create", "generate", "make", "new", "render", "emit"}
)
_DEST_KEY = re.compile(r"dest|target|output|(?:^|_)(?:out|to)(?:_|$)|save|upload|export")
_PLAIN_ADDRESS = frozenset({"uri", "url", "path", "location", "file", "key", "object", "href"})
# a resource's address: "s3://bucket/key", "https://host/path" (300 characters at most)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,9}://[^\s\"'<>]{3,300}")
_SQUEEZE = re.compile(r"(?<=\d)[-/.:_ ](?=\d)")  # "2024-06-11" read as "20240611" too


def _ids(args: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) of a call's arguments that read as identifiers."""
    if isinstance(args, dict):
        for k, v in args.items():
            yield from _ids(v, str(k))
    elif isinstance(args, (list, tuple)):
        for item in args[:50]:
            yield from _ids(item, key)
    elif isinstance(args, bool) or _MINTED.search(key):
        return
    elif isinstance(args, str) or (isinstance(args, int) and abs(args) < 10**40):
        value = str(args).strip()
        if _URI.fullmatch(value):
            yield key, value
            return
        if len(value) > 40:
            return
        if _ID.fullmatch(value) or (_ID_KEY.search(key) and re.search(r"\d{3}", value)):
            yield key, value


def _destination(call: AgentEvent, key: str) -> bool:
    """Whether the address under ``key`` is where the call writes: a key that says so
    (``dest``, ``target``, ``output_uri``), or a plain address key of a tool that
    writes (``write_file(uri=...)``; not ``create_deployment(artifact_uri=...)``, whose
    artifact is read)."""
    low = key.lower()
    if _DEST_KEY.search(low):
        return True
    return low in _PLAIN_ADDRESS and bool(_WRITES & set(tool_words(tool_name(call) or "")))


def _new_things(words: list[str]) -> set[str]:
    """What a tool that makes something makes (``create_ticket``: "ticket"), whose own
    id the caller may choose; empty for other tools."""
    if not _MAKES & set(words):
        return set()
    return {w for w in words if w not in _MAKES} or {""}


def _own_id(key: str, made: set[str]) -> bool:
    """Whether ``key`` is the id of the thing a maker tool makes (``ticket_id`` of
    ``create_ticket``; ``id`` alone)."""
    low = key.lower()
    return bool(made) and (low in ("id", "") or any(w and w in low for w in made))


class _Run:
    """The run's text, read once: every event's input and output (as written and as
    JSON), in order, lowercased, with a position for each event's start; and, made
    when first needed, the same with the separators between digits dropped."""

    def __init__(self, run: AgentTrajectory) -> None:
        self.events = run.events
        own = [flatten(run.metadata, 20_000)]
        own += [f"{a.instructions or ''} {a.role or ''}" for a in run.agents]
        self.parts = ["\n".join(own).lower()]  # (part 0: the run's own; event i: i + 1)
        for event in run.events:
            said = (flatten(event.input, _READ), flatten(event.output, _READ))
            raw = (compact_json(event.input)[:_READ], compact_json(event.output)[:_READ])
            self.parts.append(" ".join((*said, *raw)).lower())
        self.text, self.starts = joined_parts(self.parts)
        self._squeezed: tuple[str, list[int]] | None = None
        self._inputs: dict[int, str] = {}

    def first(self, value: str) -> int | None:
        """The index of the first event that holds ``value`` (-1: the run's own
        instructions), as written (any case) or by its digits (each group of four or
        more, wherever the last of them comes); None when nothing does."""
        hits = []
        at = self.text.find(value.lower())
        if at >= 0:
            hits.append(bisect.bisect_right(self.starts, at) - 1)
        groups = _GROUPS.findall(value)
        if groups:
            if self._squeezed is None:
                self._squeezed = joined_parts([_SQUEEZE.sub("", p) for p in self.parts])
            squeezed, starts = self._squeezed
            found = [_digits_at(squeezed, g) for g in groups]
            if all(f >= 0 for f in found):
                hits.append(bisect.bisect_right(starts, max(found)) - 1)
        return min(hits) - 1 if hits else None

    def keyed_before(self, index: int, key: str) -> bool:
        """Whether an event before ``index`` held a value under ``key`` (as JSON)."""
        before = self.text[: self.starts[index + 1]] if index + 1 < len(self.starts) else self.text
        low = key.lower()
        return f'"{low}": "' in before or f'"{low}":"' in before

    def given_to(self, index: int, value: str) -> bool:
        """Whether event ``index`` was given ``value`` in its own input (its prompt)."""
        if index not in self._inputs:
            event = self.events[index]
            given = f"{flatten(event.input, _READ)} {compact_json(event.input)[:_READ]}"
            self._inputs[index] = given.lower()
        return value.lower() in self._inputs[index]


def joined_parts(parts: list[str]) -> tuple[str, list[int]]:
    """``parts`` joined by newlines, and where each starts."""
    starts, at = [], 0
    for part in parts:
        starts.append(at)
        at += len(part) + 1
    return "\n".join(parts), starts


def _digits_at(text: str, digits: str) -> int:
    """Where ``digits`` first stands as a number of its own in ``text``; -1: nowhere.
    (``str.find``: a pattern with a look-behind scans 5 MB a character at a time.)"""
    at = text.find(digits)
    while at >= 0:
        end = at + len(digits)
        if not (at and text[at - 1].isdigit()) and not (end < len(text) and text[end].isdigit()):
            return at
        at = text.find(digits, at + 1)
    return -1


def rule_unsourced_argument(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's tool call given an identifier that a model made up."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}".lower()
    wanted: dict[str, tuple[AgentEvent, str]] = {}  # value -> (the first call, key)
    for call in [e for e in run.events if e.type is EventType.TOOL_CALL][:MOST_CALLS]:
        words = tool_words(tool_name(call) or "")
        acts = bool(words) and not only_reads(words)
        made = _new_things(words)
        for key, value in _ids(call.input):
            if _own_id(key, made) or value in wanted:
                continue
            if acts or value.lower() in failure:
                wanted[value] = (call, key)
        if len(wanted) >= MOST_VALUES:
            break
    if not wanted:
        return
    text = _Run(run)
    for value, (call, key) in wanted.items():  # (the earliest call's: a made-up id
        at = text.first(value)  # explains what follows)
        if at is None or at < 0:
            continue  # (nowhere: not this run's to judge; or in its instructions)
        first = run.events[at]
        if first.type in _SAYS and text.given_to(at, value):
            continue  # (given in its own prompt)
        said = first.type in _SAYS or (first.type is EventType.TOOL_CALL and first is call)
        if _URI.fullmatch(value) and (not text.keyed_before(at, key) or _destination(call, key)):
            continue  # (an address built, or one to write to: only one to read, where given)
        if said and first.agent_name:
            yield _finding(first, call, key, value)
            return


def _finding(model: AgentEvent, call: AgentEvent, key: str, value: str) -> Finding:
    agent = model.agent_name
    tool = tool_name(call) or "a tool"
    return rule_finding(
        RULE,
        "reflection.hallucinated_fact",
        model,
        f"{agent} called {tool} with {key}={value!r}, which nothing in the run had given "
        "(not the request, nor any tool's result)",
        confidence=0.6,
        evidence=[quoted(call, "input", value)],
        metadata={
            "fix": (
                f"At step {model.step_index}, {agent}: {value!r} appears nowhere before "
                f"this call; find the {key} with a tool that lists them (or ask the user) "
                f"and call {tool} with the value it gives, not an assumed one."
            )
        },
    )
