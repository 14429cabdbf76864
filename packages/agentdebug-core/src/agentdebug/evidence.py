"""Grounding: a quoted piece of evidence must be found in the trace it cites.

Strategies quote evidence ("the agent wrote X at step 12"); models paraphrase,
mis-cite steps and invent quotes. Each quote is looked up in the trajectory and
marked with what was found, and a claim resting on quotes that are not there loses
confidence (principle 2, "Evidence, not verdicts").

    g = Grounder(trajectory)                               # one per trajectory
    m = g.find("date must be YYYY-MM-DD", step_index=4)    # Match(kind=EXACT, ...)
    evidence = g.ground(evidence, blamed_step=4)           # a marked copy
    findings = ground_findings(findings, g)                # confidence adjusted

What is searched. An event's text is, part by part: its input and output as
readable text (``text.flatten``) and, for dict/list payloads, also as compact JSON
(``text.compact_json``); the error's type, message and traceback; every string in
its metadata (a handoff target, a role); its agent name; and what the prompts and
``show`` write of it (the error as ``Type: message``, a small payload as the full
view shows it, each tool call as ``get_weather({"city":"Pariss"})``: see
:mod:`agentdebug._evidence_text`). No match crosses from one part to the next.
Compact JSON is searched verbatim only (when small, normalised too): its strings are
in the readable text, which is normalised (and the few strings ``flatten`` leaves
out, such as a message's role, are added to the normalised text). The goal and the
reference answer are searchable too (quoting the task is legitimate): such a match
has ``source`` "goal" or "reference" and no event. A quote is read without the
labels a view puts before a line (``[assistant]``, ``ERROR:``, ``→ call``); a quote
of one tool call, ``name(...)``, is looked for in tool.call events first.

Where, in which order. The cited event; then the other events of the cited step
(the cited event's step when only an event is cited); then all events in order,
then the goal, then the reference answer. In each scope EXACT, NORMALIZED and
FRAGMENTS are tried in that order, earliest event first; PARTIAL only after all
three failed everywhere, again scope by scope. A match outside the cited event and
step is ``elsewhere``; with no citation at all nothing is.

Match kinds
    EXACT       the quote, trimmed of outer whitespace, occurs verbatim.
    NORMALIZED  it occurs once both sides are normalised: escapes decoded (``\\n``,
                ``\\t``, ``\\r``, ``\\"``, ``\\'``, ``\\/``, ``\\\\``, ``\\uXXXX``, at
                any depth of escaping: a quote written ``a\\nb`` matches a, newline,
                b, and JSON inside a string in the trace matches a quote with real
                newlines); Unicode NFKC; curly quotes straight, dash variants "-",
                zero-width characters dropped; markdown markers ``**``, ``__`` and
                backticks dropped; case folded; every whitespace run one space. The
                quote alone is also stripped of surrounding quotes, punctuation and
                backslashes. A quote of JSON written with spaces (``"a": 1, "b"``)
                also matches the trace's compact JSON of a tool call (``"a":1,"b"``).
    FRAGMENTS   the quote has ellipses ("...", "…", "[...]", "(...)"): it is split
                there; fragments under 2 words are ignored (unless all are, then
                all count); every kept fragment must occur, normalised, in order,
                in one event. ``coverage`` is the kept fragments' share of the
                quote's characters.
    PARTIAL     the rule for partial matches, for quotes of at least 6 words. A
                word is a run of ASCII letters, digits, underscores and non-ASCII
                characters of the normalised text. Take the quote's distinct word
                3-grams (within fragments, never across an ellipsis); an event's
                share is the fraction of them found in its words. At 60 % or more
                the quote is PARTIAL with ``coverage`` = that share (grounded, with
                reduced credit); below, NONE. Scope by scope as above; within the
                first scope that reaches 60 %, the highest share wins, ties to the
                earliest event.
    NONE        not found; ``coverage`` holds the best share seen, which tells a
                paraphrase (some) from an invention (none).

A quote under 3 characters after normalisation means nothing out of place: it is
EXACT when verbatim in the cited event or step, else NONE with ``checked=False``
("too short to check"), which costs no confidence.

Confidence. ``ground_findings`` and ``ground_hypotheses`` multiply a claim's
confidence by 0.75 per quote not found and 0.9 per partial one, floored at 25 % of
the original, and record ``metadata["grounding"]``: quotes, grounded (partial ones
included), partial, missing, elsewhere, too_short, confidence_before. A quote
found at another step costs a hypothesis nothing: the evidence is re-pointed there,
and says so. A finding whose quotes cited from its step are all found only at other
steps (``off_step``) is multiplied by 0.75 once: not its step's mistake they show.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import accumulate
from typing import Any, NamedTuple, TypeVar

from agentdebug._evidence_text import (
    NORM,
    RAW,
    WHOLE,
    compact_call,
    event_parts,
    is_call,
    opens_call,
    unlabelled,
    whole_find,
)
from agentdebug.schema import AgentTrajectory, EventType, Evidence, Finding, Hypothesis

PARTIAL_THRESHOLD = 0.6
PARTIAL_MIN_WORDS = 6
FRAGMENT_MIN_WORDS = 2
MIN_CHARS = 3
MISSING_FACTOR = 0.75
PARTIAL_FACTOR = 0.9
OFF_STEP_FACTOR = 0.75
CONFIDENCE_FLOOR = 0.25


class MatchKind(StrEnum):
    EXACT = "exact"
    NORMALIZED = "normalized"
    FRAGMENTS = "fragments"
    PARTIAL = "partial"
    NONE = "none"


@dataclass(frozen=True)
class Match:
    """Where a quote was found, and how well.

    ``source`` is "event", "goal" or "reference" (None when not found). ``field``
    names the part of the event that held it (input, output, error, metadata,
    agent) when known. ``checked`` is False for a quote too short to check.
    """

    kind: MatchKind
    event_id: str | None = None
    step_index: int | None = None
    coverage: float = 0.0
    elsewhere: bool = False
    source: str | None = None
    field: str | None = None
    checked: bool = True

    @property
    def grounded(self) -> bool:
        return self.kind is not MatchKind.NONE


# -- normalisation ---------------------------------------------------------------------

_ESCAPE = re.compile(
    r"\\+(?:u(d[89ab][0-9a-f]{2})\\+u(d[c-f][0-9a-f]{2})|u([0-9a-f]{4})|([ntr\"'/\\]))",
    re.IGNORECASE,
)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r"}
_FOLD = {
    **dict.fromkeys("‘’‚‛′´", "'"),
    **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff\u00ad`", ""),
}
_ODD = re.compile("[" + "".join(_FOLD) + "]")
_STRIP = " \"'.,;:!?\\"
_ELLIPSIS = re.compile(r"\[\s*\.{3,}\s*\]|\(\s*\.{3,}\s*\)|\.{3,}")
# ASCII punctuation to spaces; letters, digits, "_" and UTF-8 bytes of other
# characters are kept: the words of PARTIAL, cheap to build for megabytes.
_WORD_BYTES = bytes(
    b if b >= 0x80 or chr(b).isalnum() or b == ord("_") else 0x20 for b in range(256)
)
_SEP = "\x00"  # between the parts of one event
_JSON_GAP = re.compile(
    r' ?([:,]) (?=["\[{\d-]|true\b|false\b|null\b)'  # '"a": 1, "b"' -> '"a":1,"b"'
    r'|(?<=[\w"\]}]) ([:,])'  # '"a" : 1' -> '"a": 1'
    r"|(?<=[\[{]) | (?=[\]}])"  # '{ "a" }' -> '{"a"}'
)


def _unescape(m: re.Match[str]) -> str:
    hi, lo, code, char = m.groups()
    if hi:
        return chr(0x10000 + ((int(hi, 16) - 0xD800) << 10) + (int(lo, 16) - 0xDC00))
    if code:
        value = int(code, 16)
        return "\ufffd" if 0xD800 <= value <= 0xDFFF else chr(value)
    return _ESCAPED.get(char, char)


def normalize(text: str) -> str:
    """The comparable form of a text (module docstring, NORMALIZED)."""
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
    if not text.isascii():
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        for char in set(_ODD.findall(text)):
            text = text.replace(char, _FOLD[char])
    elif "`" in text:
        text = text.replace("`", "")
    text = text.replace("**", "").replace("__", "").casefold()
    return " ".join(text.split())


def json_compacted(norm: str) -> str:
    """A normalised quote of JSON written with spaces ('{"a": 1, "b": [2]}') as the
    trace's compact JSON of a tool call has it ('{"a":1,"b":[2]}'). Applied to the
    quote only, and tried against the compact JSON the trace holds, so prose is
    never changed."""
    return _JSON_GAP.sub(lambda m: m.group(1) or m.group(2) or "", norm)


def _words(norm: str) -> bytes:
    """The words of normalised text, one space between, one around."""
    return b" " + b" ".join(norm.encode("utf-8", "replace").translate(_WORD_BYTES).split()) + b" "


# -- what is searched --------------------------------------------------------------------


class _Text:
    """The searchable text of one source: raw now, normalised and in words on first need.

    Compact JSON is normalised only when small (a tool call's arguments, which models
    quote with their own spacing); big payloads are searched raw, their strings being
    in the readable text anyway. The strings the readable text leaves out are
    normalised only.
    """

    __slots__ = ("_norm", "_norm_whole", "_pending", "_words", "fields", "offsets", "raw", "whole")

    def __init__(self, parts: list[tuple[str, str, int]]) -> None:
        raw = [(f, t.replace(_SEP, " "), use) for f, t, use in parts if use & RAW]
        self.fields = [f for f, _, _ in raw]
        self.offsets = _offsets([t for _, t, _ in raw])
        self.whole = [bool(use & WHOLE) for _, _, use in raw]
        self.raw = _SEP.join(t for _, t, _ in raw)
        self._pending = [(f, t, use) for f, t, use in parts if use & NORM]
        self._norm: tuple[str, list[int], list[str]] | None = None
        self._norm_whole: list[bool] = []
        self._words: tuple[bytes, frozenset[bytes]] | None = None

    @property
    def norm(self) -> tuple[str, list[int], list[str]]:
        if self._norm is None:
            texts = [normalize(t) for _, t, _ in self._pending]
            fields = [f for f, _, _ in self._pending]
            self._norm_whole = [bool(use & WHOLE) for _, _, use in self._pending]
            self._norm = (_SEP.join(texts), _offsets(texts), fields)
            self._pending = []
        return self._norm

    def find(self, quote: str, normalised: bool, start: int = 0) -> int:
        """Where ``quote`` is, from ``start`` (-1: nowhere); in a part found only
        whole (a view's rendering), not cutting a word or a number short."""
        text, offsets = (self.norm[0], self.norm[1]) if normalised else (self.raw, self.offsets)
        whole = self._norm_whole if normalised else self.whole
        at = text.find(quote, start)
        while at >= 0:
            if not whole[bisect_right(offsets, at) - 1] or whole_find(text, quote, at) == at:
                return at
            at = text.find(quote, at + 1)
        return -1

    @property
    def words(self) -> tuple[bytes, frozenset[bytes]]:
        if self._words is None:
            joined = _words(self.norm[0])
            self._words = (joined, frozenset(joined.split()))
        return self._words

    def field(self, pos: int, normalised: bool) -> str:
        _, offsets, fields = self.norm if normalised else ("", self.offsets, self.fields)
        return fields[bisect_right(offsets, pos) - 1]


def _offsets(texts: list[str]) -> list[int]:
    return list(accumulate((len(t) + len(_SEP) for t in texts[:-1]), initial=0))


class _Source(NamedTuple):
    kind: str  # "event" | "goal" | "reference"
    pos: int  # position among the grounder's sources
    event_id: str | None
    step_index: int | None


class _Query:
    """A quote, prepared once: trimmed, normalised, split at ellipses, in 3-grams."""

    def __init__(self, quote: str) -> None:
        self.raw = unlabelled(quote.strip()).strip() or quote.strip()
        self.norm = normalize(self.raw).strip(_STRIP)
        self.norm = unlabelled(self.norm).strip(_STRIP) or self.norm  # ("`→ call f(x)`")
        self.call = is_call(self.norm)
        self.of_call = opens_call(self.norm)  # (a call as the views write one, or cut short)
        compact = json_compacted(self.norm) if '"' in self.norm else self.norm
        compact = compact_call(compact) if self.call else compact
        self.compact = compact if compact != self.norm else None
        pieces = [p.strip(_STRIP) for p in _ELLIPSIS.split(self.norm)]
        words = [_words(p).split() for p in pieces]
        self.fragments: tuple[str, ...] = ()
        self.fragment_share = 0.0
        if len(pieces) > 1:
            kept = [p for p, w in zip(pieces, words, strict=True) if len(w) >= FRAGMENT_MIN_WORDS]
            kept = kept or [p for p in pieces if p]
            if kept:
                self.fragments = tuple(kept)
                self.fragment_share = sum(map(len, kept)) / sum(map(len, pieces))
        grams: dict[tuple[bytes, ...], None] = {}
        if sum(map(len, words)) >= PARTIAL_MIN_WORDS:
            for w in words:
                grams.update((tuple(w[i : i + 3]), None) for i in range(len(w) - 2))
        self.grams = list(grams)


# -- the grounder ----------------------------------------------------------------------


class Grounder:
    """Finds quotes in one trajectory. Each event's text is built, normalised and
    split into words once, on first need: build one per trajectory and reuse it."""

    def __init__(self, trajectory: AgentTrajectory) -> None:
        self.trajectory = trajectory
        events = trajectory.events
        self._sources = [_Source("event", i, e.id, e.step_index) for i, e in enumerate(events)]
        for kind, text in (("goal", trajectory.goal), ("reference", trajectory.reference_answer)):
            if text:
                self._sources.append(_Source(kind, len(self._sources), None, None))
        self._calls = {i for i, e in enumerate(events) if e.type is EventType.TOOL_CALL}
        self._by_id: dict[str, int] = {}
        self._by_step: dict[int, list[int]] = {}
        for i, e in enumerate(events):
            self._by_id.setdefault(e.id, i)
            self._by_step.setdefault(e.step_index, []).append(i)
        self._texts: dict[int, _Text] = {}

    def _text(self, source: _Source) -> _Text:
        text = self._texts.get(source.pos)
        if text is None:
            t = self.trajectory
            if source.kind == "event":
                parts = event_parts(t.events[source.pos])
            else:
                task = t.goal if source.kind == "goal" else t.reference_answer
                parts = [(source.kind, task or "", RAW | NORM)]
            text = self._texts[source.pos] = _Text(parts)
        return text

    def _scopes(self, event_id: str | None, step_index: int | None) -> list[list[_Source]]:
        """The cited event, the rest of the cited step, everything else: the non-empty ones."""
        cited = self._by_id.get(event_id) if event_id is not None else None
        step = (
            self._sources[cited].step_index
            if step_index is None and cited is not None
            else step_index
        )
        first = [] if cited is None else [self._sources[cited]]
        same = self._by_step.get(step, []) if step is not None else []
        second = [self._sources[i] for i in same if i != cited]
        tried = {s.pos for s in first + second}
        return [s for s in (first, second) if s] + [
            [s for s in self._sources if s.pos not in tried]
        ]

    def find(
        self, quote: str, *, event_id: str | None = None, step_index: int | None = None
    ) -> Match:
        """Look for ``quote`` where it is cited, then everywhere (module docstring)."""
        q = _Query(quote)
        scopes = self._scopes(event_id, step_index)
        if q.call:  # (a quote of a call: the tool.call event first, in each scope)
            scopes = [sorted(scope, key=lambda s: s.pos not in self._calls) for scope in scopes]
        n_cited = len(scopes) - 1
        cited = event_id is not None or step_index is not None
        if len(q.norm) < MIN_CHARS:
            for source in [s for scope in scopes[:n_cited] for s in scope] if q.raw else []:
                text = self._text(source)
                if (pos := text.find(q.raw, False)) >= 0:
                    return _match(MatchKind.EXACT, source, 1.0, False, text.field(pos, False))
            return Match(MatchKind.NONE, checked=False)
        for n, scope in enumerate(scopes):
            if found := self._find_in(q, scope):
                kind, source, coverage, field = found
                return _match(kind, source, coverage, cited and n >= n_cited, field)
        best = 0.0
        # (a quote of a call is of a call made, or of none: not partly of another)
        for n, scope in enumerate(scopes if q.grams and not q.of_call else []):
            share, where = self._partial_in(q, scope)
            if where is not None and share >= PARTIAL_THRESHOLD:
                return _match(MatchKind.PARTIAL, where, share, cited and n >= n_cited, None)
            best = max(best, share)
        return Match(MatchKind.NONE, coverage=round(best, 4))

    def _find_in(
        self, q: _Query, scope: Sequence[_Source]
    ) -> tuple[MatchKind, _Source, float, str] | None:
        for source in scope:
            text = self._text(source)
            if (pos := text.find(q.raw, False)) >= 0:
                return MatchKind.EXACT, source, 1.0, text.field(pos, False)
        for source in scope:
            text = self._text(source)
            if (pos := text.find(q.norm, True)) >= 0:
                return MatchKind.NORMALIZED, source, 1.0, text.field(pos, True)
            if q.compact is not None and (pos := text.find(q.compact, True)) >= 0:
                return MatchKind.NORMALIZED, source, 1.0, text.field(pos, True)
        for source in scope if q.fragments else []:
            text = self._text(source)
            pos, first = 0, -1
            for fragment in q.fragments:
                if (at := text.find(fragment, True, pos)) < 0:  # (whole, where it must be)
                    break
                first, pos = first if first >= 0 else at, at + len(fragment)
            else:
                return MatchKind.FRAGMENTS, source, q.fragment_share, text.field(first, True)
        return None

    def _partial_in(self, q: _Query, scope: Sequence[_Source]) -> tuple[float, _Source | None]:
        """The highest share of the quote's 3-grams in one source (earliest on ties)."""
        best, best_source, total = 0.0, None, len(q.grams)
        for source in scope:
            joined, vocabulary = self._text(source).words
            # An upper bound first: the 3-grams whose three words all occur here.
            possible = [g for g in q.grams if all(w in vocabulary for w in g)]
            if len(possible) / total <= best:
                continue
            share = sum(b" " + b" ".join(g) + b" " in joined for g in possible) / total
            if share > best:
                best, best_source = share, source
        return best, best_source

    def ground(self, evidence: Evidence, *, blamed_step: int | None = None) -> Evidence:
        """A copy of ``evidence`` marked with what the search found.

        Sets ``grounded``, ``match`` and a ``note``; points ``event_id``,
        ``step_index`` (and ``field``) at where the quote was found; with
        ``blamed_step``, sets ``after_blamed_step``. Evidence without a quote, or
        grounded before, is returned as it is.
        """
        return self._ground(evidence, blamed_step)[0]

    def _ground(self, evidence: Evidence, blamed_step: int | None) -> tuple[Evidence, Match | None]:
        quote = evidence.quote
        if not (quote and quote.strip()) or evidence.match is not None:
            return evidence, None
        m = self.find(quote, event_id=evidence.event_id, step_index=evidence.step_index)
        update: dict[str, Any] = {"grounded": m.grounded, "match": m.kind.value}
        if m.source == "event":
            update.update(event_id=m.event_id, step_index=m.step_index)
            if m.field is not None and (m.event_id != evidence.event_id or not evidence.field):
                update["field"] = m.field
        elif m.source is not None:  # the goal or the reference answer
            update.update(event_id=None, step_index=None, field=m.source)
        if blamed_step is not None:
            after = m.source == "event" and (m.step_index or 0) > blamed_step
            update["after_blamed_step"] = after
        if note := _note(evidence, m):
            update["note"] = f"{evidence.note}; {note}" if evidence.note else note
        return evidence.model_copy(update=update), m


def _match(
    kind: MatchKind, source: _Source, coverage: float, elsewhere: bool, field: str | None
) -> Match:
    return Match(
        kind=kind,
        event_id=source.event_id,
        step_index=source.step_index,
        coverage=round(coverage, 4),
        elsewhere=elsewhere,
        source=source.kind,
        field=field if source.kind == "event" else None,
    )


_KIND_NOTES = {
    MatchKind.NORMALIZED: "matched after normalising case, spacing, quotes or escapes",
    MatchKind.FRAGMENTS: "matched as fragments around its ellipses",
    MatchKind.PARTIAL: "partial: {:.0%} of the quote found",
}


def _note(evidence: Evidence, m: Match) -> str | None:
    """What the grounding check has to say about one piece of evidence."""
    if not m.checked:
        return "too short to check"
    if m.kind is MatchKind.NONE:
        closest = f" (at most {m.coverage:.0%} of it in any one event)" if m.coverage else ""
        return f"not found in the trace{closest}"
    notes = [_KIND_NOTES[m.kind].format(m.coverage)] if m.kind in _KIND_NOTES else []
    step, event = evidence.step_index, evidence.event_id
    cited = (
        f"at the cited step {step}" if step is not None else event and f"in the cited event {event}"
    )
    if m.source != "event":
        where = "found in the " + ("task (goal)" if m.source == "goal" else "reference answer")
    elif m.elsewhere or not cited:
        where = f"found at step {m.step_index}" + (
            f" (event {m.event_id})" if step is None and event else ""
        )
    else:
        where = (
            f"found in event {m.event_id} of the same step" if m.event_id != event and event else ""
        )
    if where and cited and (m.elsewhere or m.source != "event"):
        where += f", not {cited}"
    return "; ".join([*notes, where] if where else notes) or None


# -- claims ----------------------------------------------------------------------------

Claim = TypeVar("Claim", Finding, Hypothesis)


def _ground_claim(claim: Claim, grounder: Grounder, blamed_step: int | None) -> Claim:
    if "grounding" in claim.metadata:
        return claim  # grounded before: not charged twice
    counts = dict.fromkeys(("grounded", "partial", "missing", "elsewhere", "too_short"), 0)
    off_step = 0  # (findings only) quotes cited from its step but found at others
    evidence: list[Evidence] = []
    own = claim.step_index if isinstance(claim, Finding) else None
    at_own_step = False
    for item in claim.evidence:
        new, m = grounder._ground(item, blamed_step)
        evidence.append(new)
        if new.match is None:
            continue
        if m is not None and not m.checked:
            counts["too_short"] += 1
        elif new.grounded:
            counts["grounded"] += 1
            counts["partial"] += new.match == MatchKind.PARTIAL
            counts["elsewhere"] += m is not None and (m.elsewhere or m.source != "event")
            if own is not None and new.step_index == own:
                at_own_step = True
            elif own is not None and item.step_index == own:
                off_step += 1
        else:
            counts["missing"] += 1
    if not (quotes := counts["grounded"] + counts["missing"] + counts["too_short"]):
        return claim
    if at_own_step:
        off_step = 0
    before = claim.confidence
    factor = MISSING_FACTOR ** counts["missing"] * PARTIAL_FACTOR ** counts["partial"]
    factor *= OFF_STEP_FACTOR if off_step else 1.0
    after = round(max(before * factor, before * CONFIDENCE_FLOOR), 6)
    record: dict[str, Any] = {"quotes": quotes, **counts, "confidence_before": before}
    if off_step:
        record["off_step"] = off_step
    update = {"evidence": evidence, "confidence": after}
    return claim.model_copy(update={**update, "metadata": {**claim.metadata, "grounding": record}})


def ground_findings(
    findings: Sequence[Finding], trajectory: AgentTrajectory | Grounder
) -> list[Finding]:
    """Every finding with its evidence grounded and its confidence adjusted, in order.

    Pass a :class:`Grounder` instead of the trajectory to share one between calls.
    """
    g = trajectory if isinstance(trajectory, Grounder) else Grounder(trajectory)
    return [_ground_claim(f, g, None) for f in findings]


def ground_hypotheses(
    hypotheses: Sequence[Hypothesis], trajectory: AgentTrajectory | Grounder
) -> list[Hypothesis]:
    """Every hypothesis grounded (evidence after its step marked), confidence adjusted."""
    g = trajectory if isinstance(trajectory, Grounder) else Grounder(trajectory)
    return [_ground_claim(h, g, h.step_index) for h in hypotheses]


# -- quotes in free text ---------------------------------------------------------------

_QUOTED = re.compile(
    r"```[\w+-]*[ \t]*\n?(?P<fence>.*?)```"
    r"|`(?P<tick>[^`\s](?:[^`]*[^`\s])?)`"
    r'|"(?P<double>[^"\s](?:[^"]*[^"\s])?)"'
    r"|“(?P<curly>[^”]+)”"
    r"|(?<!\w)'(?P<single>[^'\s](?:[^']|'(?=\w))*?)(?<!\s)'(?!\w)"
    r"|(?<!\w)‘(?P<csingle>(?:[^’]|’(?=\w))+?)’(?!\w)",
    re.DOTALL,
)


def extract_quotes(text: str, *, min_chars: int = 8) -> list[str]:
    """The quoted spans of a free-text explanation, outermost only, in order.

    Recognises "...", “...”, '...', ‘...’, `...` and fenced code blocks. An
    apostrophe inside or at the end of a word (it's, the agent's, agents') neither
    opens nor closes a quote; nor does a quote mark with a space on its inner side.
    Spans shorter than ``min_chars`` once trimmed are skipped; each is listed once.
    """
    out: dict[str, None] = {}
    for m in _QUOTED.finditer(text):
        span = next(g for g in m.groups() if g is not None).strip()
        if len(span) >= min_chars:
            out.setdefault(span, None)
    return list(out)
