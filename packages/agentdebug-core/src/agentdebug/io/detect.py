"""Choosing an importer for a file, and importing files and folders.

Every importer's ``sniff`` sees the same parsed :class:`Source`; the first that
accepts wins, so importers are tried most specific first. Whatever goes wrong
inside an importer reaches the user as one :class:`InputError` line naming file,
record and field, never as a traceback from our code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from agentdebug.errors import (
    AgentDebugError,
    InputError,
    NotFoundError,
    RecordsSkipped,
    UnknownFormatError,
)
from agentdebug.io._common import from_validation_error, short_repr
from agentdebug.io.source import STORE_HINT, read_source
from agentdebug.stages import ImportedRun, Importer, Source
from agentdebug.store.base import IMPORTED_FROM

#: The suffixes of files that must hold JSON or JSON Lines (compared without case).
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def detect_importer(source: Source, importers: Iterable[Importer]) -> Importer:
    """The first importer whose ``sniff`` accepts ``source``.

    Raises :class:`UnknownFormatError` listing every importer tried and why it
    refused. A ``sniff`` that itself fails counts as a refusal with the reason.
    """
    refusals: dict[str, str] = {}
    for importer in importers:
        reason = _refusal(importer, source)  # (a broken sniff must not hide the others)
        if reason is None:
            return importer
        refusals[importer.name] = reason
    if not refusals:
        raise InputError("no importers are installed", source=source.name)
    if _store_lines(source):
        raise InputError(
            f"an agentdebug store, not a trace to import; {STORE_HINT}", source=source.name
        )
    raise UnknownFormatError(source.name, refusals)


_STORE_KINDS = frozenset({"run", "events", "finish", "report", "label", "generation"})


def _store_lines(source: Source) -> bool:
    """Whether ``source`` is a JSON Lines store's file (its records' kinds)."""
    records = source.records or []
    return bool(records) and all(
        isinstance(r, dict) and r.get("kind") in _STORE_KINDS for r in records[:50]
    )


def default_importers() -> list[Importer]:
    from agentdebug.plugins import get_registry

    return list(get_registry().importers.values())


def declared_suffixes(importers: Iterable[Importer]) -> tuple[str, ...]:
    """The file suffixes ``importers`` say they read (their optional ``suffixes``,
    see :class:`~agentdebug.stages.Importer`), lower case with the dot, each once;
    what is not a string is passed over."""
    out: dict[str, None] = {}
    for importer in importers:
        try:
            given = getattr(importer, "suffixes", None)
        except Exception:  # (a property that raises)
            continue
        if isinstance(given, str):
            given = (given,)
        if not isinstance(given, list | tuple | set | frozenset):
            continue
        for suffix in given:
            if isinstance(suffix, str) and suffix.strip(". "):
                suffix = suffix.strip().lower()
                out["." + suffix.lstrip(".")] = None
    return tuple(out)


def read_for(path: str | Path, importers: Sequence[Importer], format: str | None) -> Source:
    """``path`` read as ``importers`` (or the one ``format`` names) need it
    (:func:`read_source`): a file with a suffix one of them declares is text when
    it is not JSON. A file that is not JSON and not named as JSON (``*.json``,
    ``*.jsonl``, ``*.ndjson``; with ``format``, any) is handed over as text when
    one of them takes it as text (its ``sniff``); else its JSON error stands, or,
    for a ``format`` whose importer declares a suffix that is not JSON's (it reads
    text), that importer's reason."""
    chosen = [named_importer(importers, format)] if format is not None else list(importers)
    own = declared_suffixes(chosen)
    try:
        return read_source(path, text_suffixes=own)
    except InputError as exc:
        if format is None and Path(path).suffix.lower() in JSON_SUFFIXES:
            raise
        try:
            source = read_source(path, text_suffixes=own, text_fallback=True)
        except InputError:
            raise exc from None
        if source.text is None:  # pragma: no cover - (JSON now: read twice, changed between)
            return source
        reasons = [_refusal(importer, source) for importer in chosen]
        if any(reason is None for reason in reasons):
            return source
        if format is not None and set(own) - set(JSON_SUFFIXES):
            raise InputError(f"not a '{format}' file: {reasons[0]}", source=source.name) from None
        raise exc from None


def _refusal(importer: Importer, source: Source) -> str | None:
    try:
        return importer.sniff(source)
    except Exception as exc:  # (a broken sniff: a refusal, with its reason)
        return f"sniff failed: {type(exc).__name__}: {exc}"


def named_importer(importers: Sequence[Importer], format: str) -> Importer:
    for importer in importers:
        if importer.name == format:
            return importer
    known = ", ".join(i.name for i in importers)
    raise NotFoundError(f"unknown import format '{format}' (known: {known})")


def choose_importer(source: Source, importers: Sequence[Importer], format: str | None) -> Importer:
    """The importer ``format`` names (its ``sniff`` must accept ``source``), or the
    one auto-detection picks."""
    if format is not None:
        importer = named_importer(importers, format)
        reason = importer.sniff(source)
        if reason is not None:
            raise InputError(f"not a '{format}' file: {reason}", source=source.name)
        return importer
    return detect_importer(source, importers)


@contextmanager
def reading(importer: Importer, source: Source) -> Iterator[None]:
    """Whatever goes wrong while ``importer`` reads ``source`` as one located
    :class:`InputError`, never a traceback from inside it."""
    try:
        yield
    except AgentDebugError as exc:
        if isinstance(exc, InputError):
            raise exc.located(source=source.name) from None
        raise
    except ValidationError as exc:
        raise from_validation_error(exc, source=source.name) from None
    except KeyError as exc:
        key = exc.args[0] if exc.args else "?"
        raise InputError(
            f"a required field is missing (importer '{importer.name}')",
            source=source.name,
            field=str(key),
        ) from None
    except (TypeError, ValueError, AttributeError, IndexError) as exc:
        raise InputError(
            f"cannot be read as '{importer.name}': {type(exc).__name__}: "
            f"{short_repr(str(exc), 200)}",
            source=source.name,
        ) from None


def load_runs(importer: Importer, source: Source) -> list[ImportedRun]:
    """Every run ``importer`` reads from ``source``. A file some of whose records
    could not be read raises :class:`RecordsSkipped` holding the runs that could."""
    runs: list[ImportedRun] = []
    unreadable = list(getattr(source.records, "unreadable", None) or ())  # (lines not JSON)
    try:
        with reading(importer, source):
            runs.extend(importer.load(source))
    except RecordsSkipped as exc:
        if unreadable:
            raise RecordsSkipped([*unreadable, *exc.errors], runs) from None
        exc.runs = runs
        raise
    if unreadable and runs:
        raise RecordsSkipped(unreadable, runs)
    if not runs:
        raise InputError(f"no runs found (read as '{importer.name}')", source=source.name)
    return runs


def import_source(
    source: Source,
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
) -> list[ImportedRun]:
    """Import an already-read source; see :func:`import_file`."""
    chosen = list(importers) if importers is not None else default_importers()
    return load_runs(choose_importer(source, chosen, format), source)


def import_file(
    path: str | Path,
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
) -> list[ImportedRun]:
    """Read ``path`` and import every run in it.

    ``format`` forces one importer by name (its ``sniff`` must still accept the
    file, so a wrong choice fails with that importer's reason). ``importers``
    defaults to those registered through the ``agentdebug_importers`` hook. A file
    holding several runs some of which cannot be read raises
    :class:`~agentdebug.errors.RecordsSkipped`, whose ``runs`` are the others.
    """
    chosen = list(importers) if importers is not None else default_importers()
    return import_source(read_for(path, chosen, format), importers=chosen, format=format)


def stamped(
    runs: Iterable[ImportedRun], path: Path, files: Sequence[Path] = ()
) -> list[ImportedRun]:
    """``runs`` marked as imported from ``path`` (``metadata["imported_from"]``,
    the absolute path: how a batch import tells a run id another file gave from
    the same file imported again), and, for a
    run read from several files (a trace a collector's rotation split), every one
    of them in ``metadata["imported_files"]``."""
    where = str(path.resolve())
    out = []
    for run in runs:
        meta = {**run.trajectory.metadata, IMPORTED_FROM: where}
        if len(files) > 1:
            meta["imported_files"] = [str(f.resolve()) for f in files]
        out.append(replace(run, trajectory=run.trajectory.model_copy(update={"metadata": meta})))
    return out
