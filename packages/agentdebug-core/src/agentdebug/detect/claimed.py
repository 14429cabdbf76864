"""A reply that says the action a tool just failed to do was done.

A travel agent's ``book_flight`` returns "ERROR 402: card ending 4411 was declined";
the agent answers "You're all set! LH 401 is booked for M. Okafor". The reply does
not use a generic success word ("successfully", "task complete"), so the run only
read as done over an unresolved error, and the call that was declined took the
blame, with "retry once" as the fix. The call was fine: the card was declined. The
fault is the reply that told the user it went through (``observation.error_ignored``).

A claim is the failed tool's own verb said as done ("booked" for ``book_flight``,
"refunded" or "issued" for ``issue_refund``, "sent" for ``send_email``), or a plain
confirmation ("confirmed", "all set", "went through"), in a reply that admits no
failure anywhere ("error", "could not", "declined", "sold out", "unfortunately"...).
A plain confirmation counts only in a sentence that names the call (its tool's
words, "booking", or one of its arguments, "LH 401"). A tool that only reads (a
read word anywhere in its name: ``get_``, ``web_search``, ``sql_db_query``) does
nothing to claim; what an answer says after a failed lookup is ``invented.py``'s.
A verb denied, put off or made a condition anywhere before it in its sentence
("No flight has been booked", "I'll have it booked", "once it's booked", "when the
seat is booked"), or followed by "yet", or asked about ("Shall I get it booked?")
is no claim; nor is a verb that a tool which succeeded in the run also says ("is
booked" after ``book_flight`` worked and ``book_hotel`` failed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from agentdebug.detect.invented import call_of, from_task, leaves
from agentdebug.detect.signals import ENVIRONMENT_MODES, ERROR_ACK, tool_name
from agentdebug.schema import AgentEvent, EventType
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

CLAIMED = "claimed"  # a finding's metadata: the failed result a reply said was done

# words a reply uses to say something went wrong (besides ERROR_ACK's), the world's
# refusals among them
ADMITS = re.compile(
    r"\b(?:declined|denied|rejected|refused|unfortunately|sorry|apolog\w+|"
    r"insufficient|unavailable|not available|not (?:go|gone) through|did not go|"
    r"didn't go|no longer|invalid|expired|not (?:been )?(?:completed|processed|placed)|"
    r"sold out|fully booked|out of stock|no (?:\w+ )?(?:seats?|rooms?|availability|"
    r"tables?|slots?|tickets?)(?: \w+)?(?: left| available)?)\b",
    re.I,
)

# a failure that is the world's answer to a right call (a card declined, a room
# sold out), not the call's own fault: the decision to call is not what to fix
REFUSED = re.compile(
    r"\bdeclined\b|\binsufficient (?:funds|balance|credit)\b|\bpayment (?:required|"
    r"failed|refused|rejected)\b|\b(?:error|http|status|code)\W{0,3}402\b|^\W*402\b|"
    r"\bout of stock\b|\bsold out\b|\bfully booked\b|"
    r"\bno (?:seats?|rooms?|availability|inventory|slots?) (?:left|available)\b|"
    r"\b(?:card|account) (?:is |was |has )?(?:expired|blocked|frozen|closed|suspended)\b|"
    r"\b(?:credit|spending|card|daily|withdrawal) limit (?:exceeded|reached)\b|"
    r"\bover (?:the|your) (?:credit |spending )?limit\b",
    re.I,
)

# a plain confirmation, whatever the tool was (in a sentence that names the call)
_CONFIRMED = re.compile(
    r"\b(?:confirmed|all set|went through|gone through|(?:is|are|has been|have been) done)\b",
    re.I,
)

# a sentence's end: not the dot of an initial ("M. Okafor") or of a number ("17.40")
_END = re.compile(r"(?<!\b[A-Z])[.!?](?=\s|$)|\n")

# read words that commit to figures the model chose: a computation, an estimate, a
# conversion or a summary (no lookup: see _GATHERS)
_COMMITS = frozenset(
    ["estimate", "quote", "calculate", "compute", "convert", "translate", "summarize", "parse"]
)
# tool-name words that only read: nothing to claim was done
_READS = (
    frozenset(
        [
            "get",
            "fetch",
            "search",
            "find",
            "lookup",
            "look",
            "list",
            "read",
            "query",
            "check",
            "retrieve",
            "load",
            "show",
            "view",
            "describe",
            "count",
            "browse",
            "scan",
            "inspect",
            "peek",
            "validate",
            "verify",
            "wikipedia",
        ]
    )
    | _COMMITS
)
_IRREGULAR = {
    "send": "sent|delivered",
    "pay": "paid|charged",
    "buy": "bought|purchased",
    "book": "booked|reserved",
    "make": "made",
    "write": "written|wrote",
    "put": "put",
    "set": "set",
    "hold": "held",
    "run": "ran",
    "sell": "sold",
    "build": "built",
    "give": "given|gave",
    "take": "taken|took",
    "cancel": "cancell?ed",
    "wire": "wired",
    "withdraw": "withdrawn|withdrew",
    "spend": "spent",
    "freeze": "frozen|froze",
    "shut": "shut",
    "lend": "lent",
    "deal": "dealt",
    "email": "e-?mailed",  # ("The quote was e-mailed")
}
# a verb said as not done, put off or made a condition, before it in its sentence
_NOT_DONE = re.compile(
    r"\b(?:not|never|no|nothing|none|yet|will|would|shall|should|can|could|may|might|must|"
    r"once|after|before|until|till|unless|if|when|whenever|whether|soon|being|to be|to get|"
    r"to have|have it|get it|ready to)\b|n't\b|'ll\b",
    re.I,
)
_PUT_OFF = re.compile(r"^\W*(?:\w+\W+)?(?:yet|soon|later|shortly|once)\b", re.I)
_BENIGN = re.compile(r"\bno problems?\b", re.I)  # ("No problem! It is booked")


def tool_words(tool: str) -> list[str]:
    """The words of a tool's name: ``issueRefund``, ``issue_refund``, ``issue-refund``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", tool)
    return [w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if len(w) > 1]


def done_form(word: str) -> str:
    """A word's done form(s), as a regex: ``book`` -> ``booked``, ``place`` -> ``placed``,
    ``apply`` -> ``applied``, ``stop`` -> ``stopped``; a noun gets a form nobody
    writes, which matches nothing."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("e"):
        return word + "d"
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ied"
    if (
        word[-1] not in "aeiouwxy"
        and word[-2] in "aeiou"
        and (len(word) < 3 or word[-3] not in "aeiou")
    ):
        return f"{word}{word[-1]}?ed"  # (stopped, committed; visited, edited)
    return word + "ed"


def only_reads(words: list[str]) -> bool:
    """A tool that only reads: a read word anywhere in its name (``check_in`` and
    ``check_out`` do something)."""
    return _named_by(words, _READS)


def _named_by(words: list[str], vocabulary: frozenset[str]) -> bool:
    return any(
        w in vocabulary and not (w == "check" and words[i + 1 : i + 2] in (["in"], ["out"]))
        for i, w in enumerate(words)
    )


_MODEL_TURNS = frozenset({EventType.LLM_CALL, EventType.LLM_RESPONSE})

# of the read words, those that only gather (a lookup; "count" may act: count_vote)
_GATHERS = _READS - _COMMITS - {"count"}


def only_gathers(tool: str) -> bool:
    """A tool that only looks things up (``get_order``, ``search_flights``,
    ``check_availability``): calling it commits the run to nothing. Its name starts
    with a lookup's verb and joins no other action to it (not ``find_and_book``,
    ``get_or_create_user``, ``verify_and_pay``, ``list_for_sale``; nor
    ``sql_db_query``, ``mark_as_read``, whose first word is not one)."""
    words = tool_words(tool)
    return (
        bool(words)
        and words[0] in _GATHERS
        and not {"and", "or", "then"} & set(words)
        and words[1:2] != ["for"]
        and not (words[0] == "check" and words[1:2] in (["in"], ["out"]))
    )


def only_looks_up(event: AgentEvent) -> bool:
    """A decision that only looked things up: a tool call of a lookup tool, or a
    model's turn whose every call is one (``get_order``, ``search_flights``)."""
    if event.type is EventType.TOOL_CALL:
        name = tool_name(event)
        return name is not None and only_gathers(name)
    out = event.output
    if event.type not in _MODEL_TURNS or not isinstance(out, dict):
        return False
    calls = out.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return False
    names = [
        c.get("name") or (c.get("function") or {}).get("name") if isinstance(c, dict) else None
        for c in calls
    ]
    return all(isinstance(n, str) and only_gathers(n) for n in names)


@lru_cache(maxsize=256)
def claim_patterns(tool: str) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    """What a reply says to claim ``tool``'s action done (its own verb's done form)
    and what names the call in a sentence (its words, "booking"); None for a tool
    that only reads."""
    words = tool_words(tool)
    if not words or only_reads(words):
        return None
    forms = "|".join(done_form(w) for w in words if len(w) > 2)
    named = "|".join(
        ("e-?mail" if w == "email" else re.escape(w)) + r"(?:ing|s)?" for w in words if len(w) > 2
    )
    if not forms:
        return None
    return re.compile(rf"\b(?:{forms})\b", re.I), re.compile(rf"\b(?:{named})\b", re.I)


def claims_done(
    text: str,
    tool: str | None,
    *,
    arguments: Iterable[str] = (),
    succeeded: Iterable[str] = (),
) -> re.Match[str] | None:
    """Where ``text`` says ``tool``'s action was done, in a reply that admits no
    failure; None where it does not (or admits one, or the tool only reads).
    ``arguments``: the failed call's values (a sentence naming one names the call);
    ``succeeded``: the tools that worked in the run (a done form one of them says
    too may be theirs)."""
    patterns = claim_patterns(tool) if tool else None
    if patterns is None:
        return None
    verb, named = patterns
    if ERROR_ACK.search(_BENIGN.sub("", text)) or ADMITS.search(text):
        return None
    theirs = [p[0] for p in map(claim_patterns, set(succeeded) - {tool}) if p is not None]
    values = [a for a in arguments if len(a) >= 3]
    for match in _claims(text, verb):
        if not any(p.fullmatch(match.group()) for p in theirs):
            return match
    for match in _claims(text, _CONFIRMED):
        said = sentence(text, match, limit=400)
        if named.search(said) or any(v.lower() in said.lower() for v in values):
            return match
    return None


def _claims(text: str, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    """The matches of ``pattern`` said as done: not in a question, not put off."""
    found = []
    for match in pattern.finditer(text):
        starts = [m.end() for m in _END.finditer(text, 0, match.start())]
        opening = text[starts[-1] if starts else 0 : match.start()]
        ending = _END.search(text, match.end())
        if ending is not None and ending.group() == "?":
            continue  # asked about, not said ("Shall I get it booked?")
        if _NOT_DONE.search(opening) or _PUT_OFF.match(text[match.end() : match.end() + 40]):
            continue
        found.append(match)
    return found


def sentence(text: str, match: re.Match[str], limit: int = 160) -> str:
    """The sentence of ``text`` that ``match`` is in, at most ``limit`` characters
    around it."""
    start = max((m.end() for m in _END.finditer(text, 0, match.start())), default=0)
    after = _END.search(text, match.end())
    end = after.end() if after is not None else len(text)
    start = max(start, match.start() - limit // 2)
    return text[start : min(end, start + limit)].strip()


def claimed(
    ctx: RuleContext, failed: AgentEvent, reply: AgentEvent, succeeded: set[str]
) -> tuple[re.Match[str], str] | None:
    """Where ``reply`` says the action ``failed`` was to do was done, and its text;
    None where it does not, or ``failed`` names no tool of its own (a node's error
    reads as its module's). ``succeeded``: the tools whose results did not fail."""
    name = tool_name(failed)
    if name is None or (name == failed.module and not failed.metadata.get("tool_name")):
        return None
    call = call_of(ctx, failed)
    text = flatten(reply.output, limit=4000)
    found = claims_done(
        text,
        name,
        arguments=list(leaves(call.input)) if call is not None else (),
        succeeded=succeeded,
    )
    return (found, text) if found is not None else None


def world_refused(ctx: RuleContext, failed: AgentEvent) -> bool:
    """``failed`` is the world's answer to a right call (a card declined, a timeout,
    no such record of the task's own), not the call's fault."""
    mode, error = ctx.failures[failed.id]
    if mode == "action.malformed_tool_call":
        return False
    if mode == "system.resource_not_found":  # (a record of the task's own, or a typo?)
        call = call_of(ctx, failed)
        return call is not None and from_task(call, ctx.trajectory.goal or "")
    return mode in ENVIRONMENT_MODES or REFUSED.search(error) is not None
