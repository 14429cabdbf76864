"""ReAct transcripts through ``agentdebug ingest``: a plain-text file (``.txt`` or
``.log``, which core hands over as text rather than parsing it as JSON) or the transcript wrapped in
JSON: ``{"transcript": "Question: ...\\nThought: ...", "goal"?, "id"?,
"reference_answer"?, "agent_name"?, "metadata"?}``, a list of such objects, or
one per line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.stages import ImportedRun, Source

from agentdebug_react._parse import _LABEL, TranscriptError, parse_transcript
from agentdebug_react._step import DEFAULT_AGENT


def _is_transcript(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    text = value.get("transcript")
    return isinstance(text, str) and any(_LABEL.match(line) for line in text.splitlines()[:200])


class TranscriptImporter:
    """Reads ReAct transcripts wrapped in JSON objects with a ``transcript`` field."""

    name = "react-transcript"
    description = 'ReAct text transcripts (Thought/Action/Observation) in {"transcript": "..."}'

    def sniff(self, source: Source) -> str | None:
        items = self._items(source)
        if items is None:
            return "not a JSON object or list of objects"
        if not items:
            return "empty list"
        if not all(_is_transcript(item) for item in items):
            return "no 'transcript' text with Thought/Action/Observation lines"
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        items = self._items(source) or []
        many = len(items) > 1 or source.records is not None or isinstance(source.document, list)
        # a JSON Lines file's errors name the line, as an editor counts it; a JSON
        # list's the record (its index from 1)
        lines = getattr(source.records, "line_numbers", None)
        errors: list[InputError] = []  # (a record that cannot be read costs only its run)
        read = 0
        for number, item in enumerate(items, start=1):
            record = number if many and lines is None else None
            where: dict[str, Any] = {"record": record}
            if lines is not None:
                where = {"lineno": lines[number - 1]}
            stem = source.path.stem
            given = item.get("id")
            run_id = str(given) if given is not None else (f"{stem}-{number}" if many else stem)
            try:
                meta = item.get("metadata")
                if meta is not None and not isinstance(meta, Mapping):
                    raise InputError(
                        "must be an object", source=source.name, field="metadata", **where
                    )
                trajectory = parse_transcript(
                    item["transcript"],
                    goal=_text(item, "goal", source, where),
                    agent_name=_text(item, "agent_name", source, where) or DEFAULT_AGENT,
                    run_id=run_id,
                    reference_answer=_text(item, "reference_answer", source, where),
                    metadata=meta,
                    source=source.name,
                )
            except TranscriptError as exc:
                if source.text is not None:  # a plain-text file: its lines are the file's
                    raise
                errors.append(exc.located(field="transcript", **where))
                continue
            except InputError as exc:
                errors.append(exc)
                continue
            read += 1
            yield ImportedRun(trajectory=trajectory)
        if len(errors) == 1 and not read:
            raise errors[0]
        if errors:  # (after the runs that could be read)
            raise RecordsSkipped(errors)

    @staticmethod
    def _items(source: Source) -> list[Mapping[str, Any]] | None:
        if source.text is not None:
            return [{"transcript": source.text}]
        if source.records is not None:
            values: Any = source.records
        elif isinstance(source.document, Mapping):
            values = [source.document]
        else:
            values = source.document
        if not isinstance(values, list) or not all(isinstance(v, Mapping) for v in values):
            return None
        return values


def _text(item: Mapping[str, Any], key: str, source: Source, where: dict[str, Any]) -> str | None:
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InputError("must be a string", source=source.name, field=key, **where)
