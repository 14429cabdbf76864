"""Choosing an importer for a file, and importing files and folders.

Every importer's ``sniff`` sees the same parsed :class:`Source`; the first that
accepts wins, so importers are tried most specific first. Whatever goes wrong
inside an importer reaches the user as one :class:`InputError` line naming file,
record and field, never as a traceback from our code.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from agentdebug.errors import AgentDebugError, InputError, NotFoundError, UnknownFormatError
from agentdebug.io._common import from_validation_error, short_repr
from agentdebug.io.source import read_source
from agentdebug.stages import ImportedRun, Importer, Source

log = logging.getLogger("agentdebug.io")

#: File name suffixes a folder import picks up.
IMPORT_SUFFIXES = (".json", ".jsonl")


def detect_importer(source: Source, importers: Iterable[Importer]) -> Importer:
    """The first importer whose ``sniff`` accepts ``source``.

    Raises :class:`UnknownFormatError` listing every importer tried and why it
    refused. A ``sniff`` that itself fails counts as a refusal with the reason.
    """
    refusals: dict[str, str] = {}
    for importer in importers:
        try:
            reason = importer.sniff(source)
        except Exception as exc:  # a broken sniff must not hide the other importers
            reason = f"sniff failed: {type(exc).__name__}: {exc}"
        if reason is None:
            return importer
        refusals[importer.name] = reason
    if not refusals:
        raise InputError("no importers are installed", source=source.name)
    raise UnknownFormatError(source.name, refusals)


def _default_importers() -> list[Importer]:
    from agentdebug.plugins import get_registry

    return list(get_registry().importers.values())


def _named(importers: Sequence[Importer], format: str) -> Importer:
    for importer in importers:
        if importer.name == format:
            return importer
    known = ", ".join(i.name for i in importers)
    raise NotFoundError(f"unknown import format '{format}' (known: {known})")


def import_source(
    source: Source,
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
) -> list[ImportedRun]:
    """Import an already-read source; see :func:`import_file`."""
    chosen = list(importers) if importers is not None else _default_importers()
    if format is not None:
        importer = _named(chosen, format)
        reason = importer.sniff(source)
        if reason is not None:
            raise InputError(f"not a '{format}' file: {reason}", source=source.name)
    else:
        importer = detect_importer(source, chosen)
    try:
        runs = list(importer.load(source))
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
    if not runs:
        raise InputError(f"no runs found (read as '{importer.name}')", source=source.name)
    return runs


def import_file(
    path: str | Path,
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
) -> list[ImportedRun]:
    """Read ``path`` and import every run in it.

    ``format`` forces one importer by name (its ``sniff`` must still accept the
    file, so a wrong choice fails with that importer's reason). ``importers``
    defaults to those registered through the ``agentdebug_importers`` hook.
    """
    return import_source(read_source(path), importers=importers, format=format)


@dataclass
class BatchImport:
    """What a batch import brought in, and what it could not read (path, why)."""

    runs: list[ImportedRun] = field(default_factory=list)
    failures: list[tuple[Path, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, plus every ``*.json`` / ``*.jsonl`` under folders named (sorted).

    Hidden files and folders (a name starting with ``.``) inside a named folder are
    skipped, as version-control and editor folders are.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [
                p
                for p in path.rglob("*")
                if p.suffix.lower() in IMPORT_SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            ]
            out.extend(sorted(found))
        else:
            out.append(path)
    return out


def import_paths(
    paths: Iterable[str | Path],
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
) -> BatchImport:
    """Import files and folders, going on past files that cannot be read.

    Each failure is kept as (path, one-line reason); an unknown ``format`` name is
    a mistake in the call, not in a file, so it raises at once.
    """
    chosen = list(importers) if importers is not None else _default_importers()
    if format is not None:
        _named(chosen, format)
    batch = BatchImport()
    for path in expand_paths(paths):
        try:
            runs = import_file(path, importers=chosen, format=format)
        except AgentDebugError as exc:
            batch.failures.append((path, str(exc)))
            continue
        except Exception as exc:  # an importer bug must not end the batch
            log.exception("importing %s failed unexpectedly", path)
            batch.failures.append((path, f"{path}: unexpected {type(exc).__name__}: {exc}"))
            continue
        batch.runs.extend(runs)
        batch.files.append(path)
    return batch
