"""Lists of records in a run's payloads, and the marks that tell their records apart.

A list of records is two to ``MOST_RECORDS`` mappings sharing at least two plain
fields (also as JSON text, or the rows of a Markdown table in a text; not a list of
chat messages). A record's *mark* in a field is a value no other record of the list
holds in any field: a text of three characters or more with a letter (lowered, read
as a whole word), or a number other than 0 to 9 (also written "$16.66", "1,200",
"97%"). :mod:`.picked` reads which step took which record by them.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import orjson

from agentdebug.detect.lost import decimal_of
from agentdebug.text import json_of

MOST_LISTS = 40  # lists of a payload read
MOST_RECORDS = 200  # records of a list read (a longer list is not read)
_READ = 200_000  # characters of a payload read
_DEPTH = 8  # levels of a payload walked for lists
# (not the digits inside an identifier: "CUP-12-SL" holds no 12)
_NUMBER = re.compile(
    r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?(?![\w-])|(?<=\s)-\d[\d,]*(?:\.\d+)?(?![\w-])"
)
_CELL_NUMBER = re.compile(r"[$€£]?\s?(-?\d[\d,]*(?:\.\d+)?)\s?%?")
_RULER = re.compile(r"[\s|:-]+")  # a Markdown table's line under its header

Mark = Decimal | str  # a number, or a text as lowered


class Text:
    """A text lowered, and the numbers it writes (read when first asked)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._numbers: frozenset[Decimal] | None = None

    @property
    def numbers(self) -> frozenset[Decimal]:
        if self._numbers is None:
            self._numbers = numbers(self.text)
        return self._numbers


NOTHING = Text("")


def strong(mark: Mark) -> bool:
    """A mark that tells a record by itself: a text, or a number of three significant
    digits or more (16.66, 2,400.5; not 30, 0.7)."""
    if isinstance(mark, str):
        return True
    digits = mark.normalize().as_tuple().digits
    return len(digits) >= 3


def key(records: list[dict[str, Any]]) -> bytes:
    """A list's identity, to read each list once (a number orjson cannot write, over
    64 bits, is written as Python does)."""
    try:
        return orjson.dumps(records, option=orjson.OPT_SORT_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError):
        return repr(records).encode()


# -- reading lists of records -----------------------------------------------------


def lists(payload: Any) -> list[list[dict[str, Any]]]:
    """The lists of records a payload holds (also in JSON text, or as a Markdown
    table's rows)."""
    found: list[list[dict[str, Any]]] = []
    budget = [20_000]  # values walked

    def walk(value: Any, depth: int) -> None:
        budget[0] -= 1
        if depth > _DEPTH or budget[0] < 0 or len(found) >= MOST_LISTS:
            return
        if isinstance(value, str):
            text = value.strip()
            if len(text) > _READ or len(text) < 8:
                return
            parsed = json_of(text, _READ)
            if parsed is not None:
                walk(parsed, depth + 1)
                return
            if "|" in text:
                rows = _table(text)
                if rows is not None:
                    found.append(rows)
        elif isinstance(value, list):
            records = _records(value)
            if records is not None:
                found.append(records)
                return
            for item in value[:MOST_RECORDS]:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            # (a mapping's values of one shape are not read as records: a user's and an
            # order's, a staging and a production config, share fields by chance)
            for item in list(value.values())[:MOST_RECORDS]:
                walk(item, depth + 1)

    walk(payload, 0)
    return found


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _records(items: list[Any]) -> list[dict[str, Any]] | None:
    """A list's records, in the plain fields they all have (two at least); None for
    a list that is not one of records (nor one of chat messages)."""
    if not 2 <= len(items) <= MOST_RECORDS or not all(isinstance(it, dict) for it in items):
        return None
    shared = [k for k, v in items[0].items() if isinstance(k, str) and _plain(v)]
    shared = [k for k in shared if all(_plain(it.get(k)) for it in items[1:])]
    if len(shared) < 2 or ("role" in shared and "content" in shared):
        return None
    return [{k: it[k] for k in shared} for it in items]


def _table(text: str) -> list[dict[str, Any]] | None:
    """A Markdown table's rows as records (its header's names), two at least."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 4 or not _RULER.fullmatch(lines[1]):
        return None
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2 : 2 + MOST_RECORDS]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows if len(rows) >= 2 and len(header) >= 2 else None


def cell(value: Any) -> Mark | None:
    """A value as a mark: a number (also written "$16.66", "1,200", "97%"), or a
    text lowered; None for what cannot mark a record (a digit, a short word)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number: Decimal | None = _decimal(str(value))
    elif isinstance(value, str):
        m = _CELL_NUMBER.fullmatch(value.strip())
        number = _decimal(m.group(1)) if m else None
        if number is None:
            text = " ".join(value.split()).casefold()
            return text if 3 <= len(text) <= 200 and any(c.isalpha() for c in text) else None
    else:
        return None
    if number is None or (number == number.to_integral_value() and abs(number) < 10):
        return None
    return number


def _decimal(text: str) -> Decimal | None:
    """A finite number as :func:`agentdebug.detect.lost.decimal_of` reads it."""
    number = decimal_of(text)
    return number if number is not None and number.is_finite() else None


def marks(records: list[dict[str, Any]]) -> list[dict[str, Mark]]:
    """Each record's marks by field: its values no other record holds in any field."""
    cells = [{f: cell(v) for f, v in rec.items()} for rec in records]
    texts = [" | ".join(str(v) for v in rec.values()).casefold() for rec in records]
    numbers = [frozenset(m for m in own.values() if isinstance(m, Decimal)) for own in cells]
    out: list[dict[str, Mark]] = []
    for r, own in enumerate(cells):
        mine: dict[str, Mark] = {}
        for field, mark in own.items():
            if mark is None:
                continue
            if isinstance(mark, Decimal):
                if any(mark in nums for k, nums in enumerate(numbers) if k != r):
                    continue
            elif any(has(text, mark) for k, text in enumerate(texts) if k != r):
                continue
            mine[field] = mark
        out.append(mine)
    return out


def label(marks: dict[str, Mark], shown: dict[str, str], field: str) -> str:
    """A record as the finding names it: its shortest text mark as written, else its
    value in ``field``."""
    texts = [f for f, mark in marks.items() if isinstance(mark, str)]
    if texts:
        return shown[min(texts, key=lambda f: len(shown[f]))]
    return f"{field} {shown[field]}"


# -- holding marks ---------------------------------------------------------------


def leaves(payload: Any, keys: bool = False) -> str:
    """Every text and number a payload holds, one a line (a tool call's arguments
    too, which :func:`agentdebug.text.flatten` leaves out of a message), up to
    ``_READ`` characters; with ``keys``, the keys of a mapping of names to figures
    too (a merge keyed by vendor, ``{"OfficeHub": 3.1}``, holds the name; not one of
    names to texts, ``{"Bolt": "missing tax id"}``, nor one under a key that says
    it holds what was left out, ``"rejected"``)."""
    parts: list[str] = []
    size = 0
    stack: list[tuple[Any, bool]] = [(payload, keys)]
    budget = 200_000  # values walked
    while stack and size < _READ and budget > 0:
        budget -= 1
        value, keyed = stack.pop()
        if isinstance(value, str):
            parts.append(value)
            size += len(value)
        elif isinstance(value, dict):
            items = list(value.items())
            stack.extend((v, keyed and not _LEFT_OUT.search(str(k))) for k, v in reversed(items))
            if keyed and items and all(_figure(v) for _, v in items):
                stack.extend((str(k), False) for k, _ in reversed(items))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, keyed) for v in reversed(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(str(value))
            size += 8
    return "\n".join(parts)[:_READ]


# keys under which a step writes what it left out, not what it took
_LEFT_OUT = re.compile(
    r"reject|exclu|drop|remov|skip|fail|invalid|disqualif|ignor|discard|lost|unmatched"
    r"|flag|error|warn|missing|penalt|issue|violation|block|deni|declin",
    re.I,
)


def _figure(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numbers(text: str) -> frozenset[Decimal]:
    found = set()
    for m in _NUMBER.finditer(text):
        number = _decimal(m.group())
        if number is not None:
            found.add(number)
    return frozenset(found)


def holds(held: Text, mark: Mark) -> bool:
    return mark in held.numbers if isinstance(mark, Decimal) else has(held.text, mark)


def has(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word (both lowered)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        at = text.find(word, at + 1)
    return False
