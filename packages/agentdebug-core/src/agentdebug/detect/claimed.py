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
failure anywhere ("error", "could not", "declined", "unfortunately"...). A tool that
only reads (``get_``, ``search_``, ``lookup_``...) does nothing to claim; what an
answer says after a failed lookup is ``invented.py``'s. A verb denied ("not booked"),
put off ("will be booked", "to be booked", "once booked") or asked about ("Shall I
get it booked?") is no claim.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentdebug.detect.signals import ERROR_ACK

# words a reply uses to say something went wrong (besides ERROR_ACK's)
ADMITS = re.compile(
    r"\b(?:declined|denied|rejected|refused|unfortunately|sorry|apolog\w+|"
    r"insufficient|unavailable|not available|not (?:go|gone) through|did not go|"
    r"didn't go|no longer|invalid|expired|not (?:been )?(?:completed|processed|placed))\b",
    re.I,
)

# a failure that is the world's answer to a right call (a card declined, a room
# sold out), not the call's own fault: the decision to call is not what to fix
REFUSED = re.compile(
    r"\bdeclined\b|\binsufficient (?:funds|balance|credit)\b|\bpayment (?:required|"
    r"failed|refused|rejected)\b|\b402\b|\bout of stock\b|\bsold out\b|\bfully booked\b|"
    r"\bno (?:seats?|rooms?|availability|inventory|slots?) (?:left|available)\b|"
    r"\b(?:card|account) (?:is |was |has )?(?:expired|blocked|frozen|closed|suspended)\b|"
    r"\blimit (?:exceeded|reached)\b|\bover (?:the|your) (?:credit |spending )?limit\b",
    re.I,
)

# a plain confirmation, whatever the tool was
_CONFIRMED = r"confirmed|all set|went through|gone through|(?:is|are|has been|have been) done"

# a sentence's end: not the dot of an initial ("M. Okafor") or of a number ("17.40")
_END = re.compile(r"(?<!\b[A-Z])[.!?](?=\s|$)|\n")

# tool-name words that only read: nothing to claim was done
_READS = frozenset(
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
        "lookup",
        "browse",
        "scan",
        "inspect",
        "peek",
        "validate",
        "verify",
        "estimate",
        "quote",
        "calculate",
        "compute",
        "convert",
        "translate",
        "summarize",
        "parse",
    ]
)
_IRREGULAR = {
    "send": "sent",
    "pay": "paid",
    "buy": "bought",
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
    "transfer": "transferred",
    "submit": "submitted",
    "ship": "shipped",
    "wire": "wired",
    "rebook": "rebooked",
}
# a verb said as not done yet, or not at all, just before the done form
_NOT_DONE = re.compile(
    r"(?:\b(?:not|never|no|nothing|yet|will|would|shall|should|can|could|may|might|must|to be|"
    r"to get|to have|once|after|before|until|unless|if|when|whether|ready to be|be|get)"
    r"|n't)\s+(?:\w+\s+){0,1}$",
    re.I,
)


def _words(tool: str) -> list[str]:
    """The words of a tool's name: ``issueRefund``, ``issue_refund``, ``issue-refund``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", tool)
    return [w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if len(w) > 1]


def _done(word: str) -> str:
    """A word's done form(s), as a regex: ``book`` -> ``booked``, ``place`` -> ``placed``,
    ``apply`` -> ``applied``; a noun gets a form nobody writes, which matches nothing."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("e"):
        return word + "d"
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ied"
    return word + "ed"


@lru_cache(maxsize=256)
def claim_patterns(tool: str) -> tuple[re.Pattern[str], ...]:
    """What a reply says to claim ``tool``'s action done, its own verb first; none
    for a tool that only reads (its first word is one of ``_READS``)."""
    words = _words(tool)
    if not words or words[0] in _READS:
        return ()
    forms = "|".join(_done(w) for w in words if w not in _READS)
    return re.compile(rf"\b(?:{forms})\b", re.I), re.compile(rf"\b(?:{_CONFIRMED})\b", re.I)


def claims_done(text: str, tool: str | None) -> re.Match[str] | None:
    """Where ``text`` says ``tool``'s action was done, in a reply that admits no
    failure; None where it does not (or admits one, or the tool only reads)."""
    patterns = claim_patterns(tool) if tool else ()
    if not patterns or ERROR_ACK.search(text) or ADMITS.search(text):
        return None
    for pattern in patterns:
        for match in pattern.finditer(text):
            sentence_end = _END.search(text, match.end())
            if sentence_end is not None and sentence_end.group() == "?":
                continue  # asked about, not said ("Shall I get it booked?")
            if _NOT_DONE.search(text[max(0, match.start() - 40) : match.start()]):
                continue
            return match
    return None


def sentence(text: str, match: re.Match[str], limit: int = 160) -> str:
    """The sentence of ``text`` that ``match`` is in, at most ``limit`` characters
    around it."""
    start = max((m.end() for m in _END.finditer(text, 0, match.start())), default=0)
    after = _END.search(text, match.end())
    end = after.end() if after is not None else len(text)
    start = max(start, match.start() - limit // 2)
    return text[start : min(end, start + limit)].strip()
