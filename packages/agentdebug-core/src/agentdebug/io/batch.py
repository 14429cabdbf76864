"""Importing many files at once: folders, runs split across files, ids that clash.

A batch goes on past files that cannot be read (each kept with its one-line
reason), and past records that cannot be read in a file holding several runs
(the others are imported). Three things only a batch can see:

- **A trace split across files.** An importer with ``gather(source)`` and
  ``load_gathered(items)`` (OTLP: a collector's file exporter rotates its file
  mid-trace; Phoenix and console-exporter spans: a rotated log) reads every file first and builds each trace from all of them. Only
  the gathered spans are held until then, not the files' parsed JSON, and each
  run is handed on (saved, by :func:`ingest_paths`) as it is built, its spans let
  go. (Not less: a trace's last span may be in the last file, a root span ends
  last; and grouping the files by the traces they share first would read each
  file twice and still hold them all where a rotating exporter wrote them, since
  traces running across each rotation link every file to the next.)
- **Ids that clash.** A run id an importer derives from a file's name
  (``trace.json`` in each run's folder) is the same for two files: the later
  file's run gets the id with a digest of its path (``whowhen-ag-trace-1a2b3c4d``),
  and a note says so, rather than replacing the earlier one; so does a record
  repeating an id earlier in its file (a counter after the digest). Importing
  into a store (:func:`ingest_paths`) does the same for a run id the store holds
  from another file; the same file imported again gets the same ids, and replaces
  its runs (:class:`RunIds`).
- **Files passed over.** A named folder's files whose suffix is not an import
  suffix are listed (``skipped``); a named folder with none to import is a failure.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdebug.errors import AgentDebugError, RecordsSkipped
from agentdebug.io.detect import (
    JSON_SUFFIXES,
    choose_importer,
    declared_suffixes,
    default_importers,
    load_runs,
    named_importer,
    read_for,
    reading,
    stamped,
)
from agentdebug.stages import ImportedRun, Importer, Source

if TYPE_CHECKING:
    from agentdebug.store.base import TraceStore

log = logging.getLogger("agentdebug.io")

#: File name suffixes a folder import picks up (compared without case), with those
#: the importers declare (``Importer.suffixes``).
IMPORT_SUFFIXES = JSON_SUFFIXES


@dataclass
class BatchImport:
    """What a batch import brought in, and what it could not read (path, why).

    ``runs`` holds the runs (:func:`import_paths`; :func:`ingest_paths` stores
    them instead and counts them in ``imported``); ``notes`` says what was done
    that the user should know (a run renamed, a trace joined from several files);
    ``skipped`` lists files in named folders that were not read (no import suffix:
    ``suffixes`` are those a folder's files were picked by).
    """

    runs: list[ImportedRun] = field(default_factory=list)
    failures: list[tuple[Path, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    imported: int = 0
    #: :func:`ingest_paths`: the run being saved, and the files it was read from
    saving: tuple[str, list[Path]] | None = None
    suffixes: tuple[str, ...] = IMPORT_SUFFIXES

    @property
    def ok(self) -> bool:
        return not self.failures


def expand_paths(
    paths: Iterable[str | Path], importers: Iterable[Importer] | None = None
) -> list[Path]:
    """Files named, plus every importable file under folders named (sorted)."""
    batch = BatchImport(suffixes=folder_suffixes(importers, None))
    return _expand(paths, batch)


def folder_suffixes(importers: Iterable[Importer] | None, format: str | None) -> tuple[str, ...]:
    """The suffixes of the files a folder import picks up: ``*.json``, ``*.jsonl``,
    ``*.ndjson`` and those the importers declare; with ``format``, those its
    importer declares (the JSON ones when it declares none)."""
    chosen = list(importers) if importers is not None else default_importers()
    if format is not None:
        return declared_suffixes([named_importer(chosen, format)]) or IMPORT_SUFFIXES
    return tuple(dict.fromkeys([*IMPORT_SUFFIXES, *declared_suffixes(chosen)]))


def _expand(paths: Iterable[str | Path], batch: BatchImport) -> list[Path]:
    """Files named, plus every file under folders named whose suffix is one of
    ``batch.suffixes`` (sorted); other files there go to ``batch.skipped``, and a
    named folder holding none to import is a failure.

    Hidden files and folders (a name starting with ``.``) inside a named folder are
    passed over without a word, as version-control and editor folders are.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            out.append(path)
            continue
        found: list[Path] = []
        other: list[Path] = []
        for p in path.rglob("*"):
            if any(part.startswith(".") for part in p.relative_to(path).parts) or not p.is_file():
                continue
            (found if p.suffix.lower() in batch.suffixes else other).append(p)
        out.extend(sorted(found))
        batch.skipped.extend(sorted(other))
        if not found:
            extra = f"; {len(other)} other file(s) passed over" if other else ""
            batch.failures.append(
                (
                    path,
                    f"{path}: no files to import in this folder ({', '.join(batch.suffixes)}){extra}",
                )
            )
    return out


def import_paths(
    paths: Iterable[str | Path],
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> BatchImport:
    """Import files and folders, going on past what cannot be read (see the module).

    An unknown ``format`` name is a mistake in the call, not in a file, so it
    raises at once. ``on_file`` is called with each file before it is read.
    """
    batch = BatchImport()
    ids = RunIds(batch.notes)
    batch.runs.extend(
        ids.choose(run, path) for run, path in _runs(paths, importers, format, batch, on_file)
    )
    batch.imported = len(batch.runs)
    return batch


def ingest_paths(
    paths: Iterable[str | Path],
    store: TraceStore,
    *,
    importers: Iterable[Importer] | None = None,
    format: str | None = None,
    on_file: Callable[[Path], None] | None = None,
    into: BatchImport | None = None,
) -> BatchImport:
    """:func:`import_paths` into ``store``, each run saved as it is read (a
    trace joined from several files, once all are read). A run whose id the store
    holds from another file is saved under the id with a digest of its path.
    ``into`` is filled as the runs are saved, so a caller knows what was imported
    when a save raises (the store's lock outlasted)."""
    batch = into if into is not None else BatchImport()
    ids = RunIds(batch.notes, store)
    for run, path in _runs(paths, importers, format, batch, on_file):
        files = run.trajectory.metadata.get("imported_files") or [path]
        batch.saving = (run.trajectory.id, [Path(f) for f in files])
        save_imported(ids, run, path)
        batch.imported += 1
    batch.saving = None
    return batch


def save_imported(ids: RunIds, run: ImportedRun, path: Path) -> ImportedRun:
    """Save a run imported from ``path`` into ``ids.store`` under the id ``ids``
    chooses (see :class:`RunIds`); the run as saved."""
    assert ids.store is not None
    run = ids.choose(run, path)
    ids.store.save_trajectory(run.trajectory, run.label)
    return run


def _runs(
    paths: Iterable[str | Path],
    importers: Iterable[Importer] | None,
    format: str | None,
    batch: BatchImport,
    on_file: Callable[[Path], None] | None,
) -> Iterator[tuple[ImportedRun, Path]]:
    """Each run read, with the file it counts as from (a joined trace: its first)."""
    chosen = list(importers) if importers is not None else default_importers()
    batch.suffixes = folder_suffixes(chosen, format)  # (an unknown format raises here)
    gathered: dict[str, tuple[Importer, list[tuple[Source, Any]]]] = {}
    for path in _expand(paths, batch):
        if on_file is not None:
            on_file(path)
        try:
            source = read_for(path, chosen, format)
            importer = choose_importer(source, chosen, format)
            gather = getattr(importer, "gather", None)
            if gather is not None and hasattr(importer, "load_gathered"):
                with reading(importer, source):
                    piece = gather(source)
                kept = Source(path=source.path)  # (the parsed file goes; its spans stay)
                gathered.setdefault(importer.name, (importer, []))[1].append((kept, piece))
                batch.files.append(path)
                # (lines that were not JSON, set aside: listed, as load_runs lists them;
                # what they held is lost, and the trace it was of is read without it)
                lost = getattr(source.records, "unreadable", None) or ()
                batch.failures.extend((path, f"{e} (a span or record lost)") for e in lost)
                continue
            runs = stamped(load_runs(importer, source), path)
        except RecordsSkipped as exc:
            runs = stamped(exc.runs, path)
            batch.failures.extend((path, str(e)) for e in exc.errors)
        except AgentDebugError as exc:
            batch.failures.append((path, str(exc)))
            continue
        except Exception as exc:  # an importer bug must not end the batch
            log.exception("importing %s failed unexpectedly", path)
            batch.failures.append((path, f"{path}: unexpected {type(exc).__name__}: {exc}"))
            continue
        batch.files.append(path)
        for run in runs:
            yield run, path
    for importer, items in gathered.values():
        yield from _joined(importer, items, batch)


def _joined(
    importer: Importer,
    items: list[tuple[Source, Any]],
    batch: BatchImport,
) -> Iterator[tuple[ImportedRun, Path]]:
    """The runs of files read by ``gather``, built from all of them together:
    ``load_gathered`` yields each run with the files it was read from, one at a
    time (so a run is saved before the next is built)."""
    built = iter(importer.load_gathered(items))  # type: ignore[attr-defined]
    paths = [s.path for s, _ in items]
    while True:
        try:
            run, files = next(built)
        except StopIteration:
            return
        except RecordsSkipped as exc:  # (each under the first file its trace was read from)
            for error in exc.errors:
                named = str(error.source or "")
                first = next((src.path for src, _ in items if _names(named, src.name)), None)
                batch.failures.append((first or paths[0], str(error)))
            return
        except AgentDebugError as exc:
            batch.failures.extend((path, str(exc)) for path in paths)
            return
        except Exception as exc:  # an importer bug must not end the batch
            log.exception("importing %s failed unexpectedly", ", ".join(map(str, paths)))
            said = f"unexpected {type(exc).__name__}: {exc}"
            batch.failures.extend((p, f"{p}: {said}") for p in paths)  # (as one file's)
            return
        if len(files) > 1:
            batch.notes.append(
                f"run '{run.trajectory.id}' joined from {len(files)} files: "
                + ", ".join(str(f) for f in files)
            )
        (run,) = stamped([run], files[0], files)
        yield run, files[0]
        del run  # (not held while the next is built)


def _names(source: str, name: str) -> bool:
    """Whether an error's ``source`` ("a.jsonl", or "a.jsonl, b.jsonl" for a joined
    trace) names the file ``name`` first: not "a.json" in "a.jsonl"."""
    return source == name or source.startswith(name + ",")


def path_digest(path: Path) -> str:
    """Eight hex digits naming a file by its absolute path: the same every time."""
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]


class RunIds:
    """Which id each imported run is saved under: its own, unless a run of another
    file (or an earlier record of the same file) has it, in this batch or in the
    store; then its id with a digest of its file's path, and a counter after that
    for a file that repeats an id. The same file imported again gets the same ids
    (its own runs in the store are its to replace)."""

    def __init__(self, notes: list[str], store: TraceStore | None = None) -> None:
        self.notes = notes
        self.store = store
        self.given: dict[str, Path] = {}  # ids given in this batch, and by which file

    def choose(self, run: ImportedRun, path: Path) -> ImportedRun:
        rid = run.trajectory.id
        holder = self._holder(rid, path)
        if holder is None:
            self.given[rid] = path
            return run
        digest = path_digest(path)
        candidate = f"{rid}-{digest}"
        for n in itertools.count(2):  # (a file that repeats an id: a counter after)
            if self._holder(candidate, path) is None:
                break
            candidate = f"{rid}-{digest}-{n}"
        self.given[candidate] = path
        self.notes.append(f"{path}: run id '{rid}' is taken by {holder}: imported as '{candidate}'")
        return replace(run, trajectory=run.trajectory.model_copy(update={"id": candidate}))

    def _holder(self, run_id: str, path: Path) -> str | None:
        """What holds ``run_id`` against a run of ``path``, if anything does."""
        if run_id in self.given:
            given = self.given[run_id]
            return "an earlier record of the same file" if given == path else f"{given}'s run"
        if self.store is None:
            return None
        from agentdebug.store.base import RunQuery

        held = self.store.list_runs(RunQuery(ids=(run_id,), limit=1))
        other = held[0].imported_from if held else None
        if other is None or other == str(path.resolve()):
            return None  # (recorded live, or imported before files were noted: replaced)
        return f"a run in the store imported from {other}"
