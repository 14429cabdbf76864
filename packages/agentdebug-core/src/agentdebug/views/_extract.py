"""Extractive summaries: the sentences, lines and names that medium and coarse views keep.

No model is available to summarise, so everything here picks pieces of the text
itself with plain rules. The rules are deliberately simple and deterministic: the
same trace always gives the same view, and every piece shown comes from the trace
(with whitespace collapsed, markdown emphasis and list markers removed).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from agentdebug.text import shorten

#: How much of a long text the extractors read: the head and the tail, where
#: agents state what they do and what they concluded.
SCAN_HEAD = 6000
SCAN_TAIL = 2000
#: The one-line view reads less: it keeps only a few names.
LINE_HEAD = 2500
LINE_TAIL = 1000

_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
# Python's warnings module: "path.py:93: UserWarning: ..." and the source line after it.
_PY_WARNING = re.compile(r"^\S+\.py:\d+: \w*Warning: .*(?:\n[ \t]+\S.*)?$", re.MULTILINE)
_MARKUP = re.compile(r"^\s*#{1,6}\s+|\*\*|__|`")
_RULE = re.compile(r"^[\s=\-_*#~`|+.:]*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“'(\[]?[A-Z0-9])")
_JSON_START = re.compile(r"^\{", re.MULTILINE)
_FIRST_ITEM = re.compile(r"^\s*1[.)]\s+\S")
_EMPHASIS = re.compile(r"\*\*|__|`")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•])\s+")
_LIST_MARKERS = re.compile(r"^[ \t]*(?:\d{1,3}[.)]|[-*•])[ \t]+", re.MULTILINE)
_THOUGHT = re.compile(r"^\s*(?:Thought|Thoughts|Reasoning)\s*:\s*", re.IGNORECASE)

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
_DOTTED = re.compile(r"(?<![\w.-])[\w-]+(?:\.[\w-]+)+")
_FILE_TYPES = frozenset(
    {
        *("py", "ipynb", "json", "jsonl", "csv", "tsv", "xlsx", "xls", "docx", "doc", "pptx"),
        *("pdf", "txt", "md", "html", "htm", "xml", "yaml", "yml", "mp3", "mp4", "wav", "png"),
        *("jpg", "jpeg", "gif", "zip", "pdb", "sql", "tex"),
    }
)
_QUOTED = re.compile(r"(?:\"([^\"\n{}\\]{2,80})\"|“([^”\n]{2,80})”)(?!\s*:)")
_NUMBER = re.compile(r"(?<![\w.:$-])[-+$]?\d(?:[\d,.:]*\d)?%?(?![\w-])")
_NAME = re.compile(r"\b[A-Z][a-z]+(?: (?:of|de|van|von))?(?:[ -][A-Z][a-zA-Z]+){1,3}\b")
# The lookahead on the first letter lets the engine skip most positions quickly.
_COMMITMENT = re.compile(
    r"\b(?=[IiWwLlNnTtGgPp])(?:I will|I'll|I am going to|I'm going to|we will|we'll|"
    r"we need to|I need to|we should|I should|let me|let's|let us|next,|next step|next I|"
    r"then I|TODO|plan to|going to)\b",
    re.IGNORECASE,
)
_ENTITY_WIDTH = 40
_BREAKS = ("\n", ". ", "! ", "? ")
SHORT_TEXT = 300


def scanned(text: str, head: int = SCAN_HEAD, tail: int = SCAN_TAIL) -> str:
    """The part of a long text the extractors read (head and tail)."""
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n" + text[-tail:]


def prose(text: str) -> str:
    """``text`` without code blocks, Python warnings and markdown emphasis."""
    text = _FENCE.sub("\n", text)
    text = _PY_WARNING.sub("", text)
    lines = (_MARKUP.sub("", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not _RULE.match(line))


def code_lines(text: str) -> list[str]:
    """The meaningful lines of the first fenced code block (comments skipped)."""
    match = _FENCE.search(text)
    if not match:
        return []
    lines = (line.strip() for line in match.group(1).splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def sentences(text: str) -> Iterator[str]:
    """Sentences of prose text; a line break ends a sentence too."""
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", _THOUGHT.sub("", line)).strip()
        for piece in _SENTENCE_END.split(line):
            if piece.strip():
                yield piece.strip()


def first_sentences(text: str, width: int = 200) -> str:
    """The opening sentences of ``text`` that fit in ``width`` characters (at least one)."""
    out: list[str] = []
    size = 0
    for sentence in sentences(text):
        if out and size + 1 + len(sentence) > width:
            break
        out.append(sentence)
        size += len(sentence) + 1
        if size >= width:
            break
    return shorten(" ".join(out), width)


def gist(text: str, width: int = 150) -> str:
    """The first lines of an output, joined, up to ``width`` characters."""
    out: list[str] = []
    size = 0
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or _RULE.match(line):
            continue
        out.append(line)
        size += len(line) + 3
        if size >= width:
            break
    return shorten(" | ".join(out), width)


def conclusion(text: str, width: int = 150) -> str:
    """What a message ends on: among its last lines, the last that states a number or an
    answer (where results are usually reported), else its last line."""
    lines = [_THOUGHT.sub("", line) for line in text.splitlines() if line.strip()]
    tail = lines[-5:]
    for line in reversed(tail):
        bare = _LIST_MARKER.sub("", line)
        if any(c.isdigit() for c in bare) or "answer" in bare.lower():
            return shorten(line, width)
    return shorten(tail[-1], width) if tail else ""


def json_gist(text: str, width: int = 200) -> str | None:
    """A one-line digest of a JSON object embedded in ``text`` (an orchestrator's ledger),
    as ``key=answer`` pairs; None when the text holds no JSON object."""
    text = _FENCE.sub("\n", text)  # a dict literal in code is not a statement
    opening = _JSON_START.search(text)
    start = opening.start() if opening else -1
    end = text.rfind("}")
    if start < 0 or end <= start or end - start > 100_000:
        return None
    try:
        value = orjson.loads(text[start : end + 1])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not value:
        return None
    lead = " ".join(text[:start].split())
    parts: list[str] = []
    for key, item in value.items():
        answer: Any = item.get("answer", item) if isinstance(item, dict) else item
        if isinstance(answer, (dict, list)):
            continue
        shown = (
            orjson.dumps(answer).decode()
            if answer is None or isinstance(answer, bool)
            else str(answer)
        )
        parts.append(f"{key}={shorten(shown, 80)}")
    if not parts:
        return None
    return shorten(f"{lead} {'; '.join(parts)}".strip(), width)


def commitment(text: str, width: int = 80) -> str:
    """The last sentence of prose text that says what comes next ("I will …", "next, …",
    "TODO"), or ""."""
    matches = list(_COMMITMENT.finditer(text))
    if not matches:
        return ""
    last = matches[-1]
    start = max(text.rfind(sep, 0, last.start()) for sep in _BREAKS) + 1
    ends = [i for i in (text.find(sep, last.end()) for sep in _BREAKS) if i >= 0]
    end = min(ends) + 1 if ends else len(text)
    return shorten(_THOUGHT.sub("", text[start:end].strip()), width)


def plan_item(text: str, width: int = 80) -> str:
    """The first numbered item of the plan in ``text``: after the last heading-like line
    that names a plan ("New plan:", "### Plan"), else the last numbered list's first."""
    lines = text.splitlines()
    start = -1
    for i, line in enumerate(lines):
        bare = line.strip().lstrip("#").strip()
        if "plan" in bare.lower() and (bare.endswith(":") or len(bare) <= 40):
            start = i
    firsts = [i for i, line in enumerate(lines) if _FIRST_ITEM.match(line)]
    after = [i for i in firsts if i > start]
    if not firsts:
        return ""
    at = after[0] if after and start >= 0 else firsts[-1]
    item = _EMPHASIS.sub("", _LIST_MARKER.sub("", lines[at])).strip()
    if len(item) < 25 and at + 1 < len(lines):  # a heading such as "1. WebSurfer:"
        item += " " + _EMPHASIS.sub("", _LIST_MARKER.sub("", lines[at + 1])).strip()
    return shorten(item, width)


def _clip(entity: str) -> str:
    """An entity cut in the middle, so a long file name keeps its extension."""
    if len(entity) <= _ENTITY_WIDTH:
        return entity
    head = _ENTITY_WIDTH // 2
    return entity[:head] + "…" + entity[-(_ENTITY_WIDTH - head - 1) :]


def entities(text: str, width: int) -> list[str]:
    """Key entities of ``text`` that fit in ``width`` characters: URLs, file names,
    quoted strings, numbers and capitalised names, taken in turn, each in order of
    first appearance."""
    if width <= 0 or not text:
        return []
    kinds: list[list[str]] = []
    rest = text
    kinds.append([m.group(0).rstrip(".,;:") for m in _URL.finditer(rest)])
    rest = _URL.sub(" ", rest)
    files = [
        m.group(0)
        for m in _DOTTED.finditer(rest)
        if m.group(0).rsplit(".", 1)[1].lower() in _FILE_TYPES
    ]
    kinds.append(files)
    for name in set(files):
        rest = rest.replace(name, " ")
    kinds.append([next(g for g in m.groups() if g) for m in _QUOTED.finditer(rest)])
    kinds[-1] = [f'"{q.strip()}"' for q in kinds[-1] if sum(c.isalnum() for c in q) >= 2]
    rest = _QUOTED.sub(" ", rest)
    unlisted = _LIST_MARKERS.sub(" ", rest)
    numbers = [m.group(0) for m in _NUMBER.finditer(unlisted)]
    if len(text) > SHORT_TEXT:  # in long texts single digits are mostly counters and list items
        numbers = [n for n in numbers if sum(c.isdigit() for c in n) > 1]
    kinds.append(numbers)
    kinds.append([m.group(0) for m in _NAME.finditer(rest)])

    queues = [list(dict.fromkeys(_clip(" ".join(e.split())) for e in kind)) for kind in kinds]
    picked: list[str] = []
    seen: set[str] = set()
    size = 0
    while any(queues):
        for queue in queues:
            while queue and queue[0] in seen:
                queue.pop(0)
            if not queue:
                continue
            entity = queue.pop(0)
            if size + len(entity) + 2 > width:
                queue.clear()
                continue
            picked.append(entity)
            seen.add(entity)
            size += len(entity) + 2
    return picked


def denoise(text: str) -> str:
    """``text`` without Python warning lines (tool noise, not the agent's content)."""
    return _PY_WARNING.sub("", text)
