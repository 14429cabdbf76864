"""An append-only JSON Lines store: one file, one record per line, rewritten only by a prune.

Useful where a database file is unwelcome (a CI artefact, a shared folder). A
process killed mid-write leaves at most a torn last line; reading skips it with a
warning (once per process, saying what the line held) and the next append, by
whichever process, starts on a fresh line (each append looks at the file's last
byte under the lock), so nothing written before or after is lost. Each line is
one of::

    {"kind": "run", "header": {...}}                     a run begins (or is imported)
    {"kind": "events", "run_id": ..., "events": [...]}  a batch of events
    {"kind": "finish", "run_id": ..., "outcome": {...}, "ended_at": ...}
    {"kind": "report", "report": {...}}
    {"kind": "label", "run_id": ..., "label": {...}}

The latest ``run`` line for an id starts that run afresh (a re-import replaces it).

Several processes may append to one file (workers of a service). Each append holds
an exclusive ``flock`` on the file while it writes, and a prune
(:meth:`JSONLStore.delete_runs`) holds the same lock while it writes the file anew
beside it and moves the new file over it. An append that waited for a prune, or
whose handle is still on the file a prune replaced, finds the handle's file no
longer in place once it holds the lock, and reopens the new one: nothing appended
in another process is lost to a prune. (An agentdebug from before this lock, still
writing the file, does not wait: stop such writers before a prune.)
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import orjson
from pydantic import ValidationError

from agentdebug.errors import NotFoundError, StoreError
from agentdebug.gcutil import gc_paused
from agentdebug.schema import AgentTrajectory, DiagnosticReport, GoldLabel, Outcome
from agentdebug.schema.trace import events_from_python
from agentdebug.store.access import not_writable, write_refused
from agentdebug.store.base import (
    EventRow,
    RunQuery,
    RunSummary,
    StoreLocked,
    StoreReadOnly,
    ambiguous,
    damaged,
    header_json,
    metadata_json_path,
)
from agentdebug.store.jsonl_query import JsonlRun, summaries
from agentdebug.store.newer_fields import (
    events_without_unknown,
    header_without_unknown,
    note_unknown,
)
from agentdebug.store.run_file import refuse_run_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory file locks
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("agentdebug.store")


class JSONLStore:
    """A :class:`~agentdebug.store.base.TraceStore` on one append-only file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._lock = threading.RLock()
        self.skipped_lines: list[int] = []
        # What has been read so far: the file only grows, so each read parses only
        # the lines added since the last one.
        self._runs: dict[str, JsonlRun] = {}
        self._offset = 0
        self._lines = 0
        self._file: tuple[int, int, bytes] | None = None  # the file read so far (see _scan)
        self._locks = True  # whether the file takes flock (some network mounts do not)
        refuse_run_file(self.path)  # (before a line is appended to someone's export)
        # why the file is open read-only (this user cannot write it), or None
        self.read_only = not_writable(self.path, folder=False)
        self._fh: BinaryIO | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.read_only is None:  # (a torn tail is read past either way)
                self._fh = open(self.path, "a+b")  # noqa: SIM115 - held for the store's life
                self._repair_tail()
            else:
                self.path.open("rb").close()  # (unreadable too: said now, not at a read)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open the store: {exc}") from exc

    def _repair_tail(self) -> None:
        """End a torn last line so the next record starts on a line of its own."""
        with self._lock, self._writing() as out:
            if _torn(out):
                out.write(b"\n")
                out.flush()

    def _hold(self) -> BinaryIO:
        """The append handle, its file's ``flock`` taken (other processes' appends
        and prunes wait until it is let go); first reopened on the file in place if
        a prune replaced the one it was on. Called with ``self._lock`` held."""
        if self._fh is None:  # (opened read-only)
            refused = PermissionError("opened to read only")
            raise StoreReadOnly(write_refused(self.path, str(self.read_only), refused))
        fh = self._fh
        while True:
            self._locks = _flock(fh, exclusive=True)
            if _in_place(fh, self.location):
                return fh
            _flock(fh, exclusive=False)  # (a prune replaced it: on to the new file)
            fh.close()
            fh = self._fh = open(self.path, "a+b")  # noqa: SIM115 - held for the store's life

    @contextlib.contextmanager
    def _writing(self) -> Iterator[BinaryIO]:
        """:meth:`_hold` for the length of a block."""
        fh = self._hold()
        try:
            yield fh
        finally:
            _flock(fh, exclusive=False)

    def _append(self, *lines: bytes) -> None:
        with self._lock:
            try:
                fh = self._hold()  # (not _writing: a generator's cost on every append)
                try:
                    data = b"".join(line + b"\n" for line in lines)
                    # A process killed mid-append (under the lock, which its death
                    # lets go) leaves a torn last line: this record starts a line of
                    # its own, so the torn line costs only itself.
                    fh.write(b"\n" + data if _torn(fh) else data)
                    fh.flush()
                finally:
                    _flock(fh, exclusive=False)
            except (OSError, ValueError) as exc:
                kind = StoreReadOnly if _refused(exc) else StoreError
                raise kind(f"{self.path}: write failed: {exc}") from exc

    # -- reading --------------------------------------------------------------------

    def _forget(self) -> None:
        """Drop what was read: the file is read from its start at the next scan."""
        self._runs, self._offset, self._lines, self.skipped_lines = {}, 0, 0, []
        self._file = None

    def _scan(self) -> dict[str, JsonlRun]:
        """Every run in the file, reading only what was appended since the last call
        (from the start again if the file is another one or shrank: a prune, or
        someone, replaced it)."""
        with self._lock:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                size = st.st_size
                # the file by its inode and its first line: a prune's file starts with
                # a line of its own, as a pruned file's inode number may be given to a
                # later prune's file
                first = os.pread(fh.fileno(), 256, 0).partition(b"\n")[0]
                if (st.st_dev, st.st_ino, first) != self._file or size < self._offset:
                    self._forget()
                    self._file = (st.st_dev, st.st_ino, first)
                if size <= self._offset:
                    return self._runs
                fh.seek(self._offset)
                chunk = fh.read(size - self._offset)
            end = chunk.rfind(b"\n") + 1  # a line still being written waits
            damaged: list[tuple[int, str]] = []
            for line in chunk[:end].split(b"\n")[:-1]:
                self._lines += 1
                if line.strip():
                    why = self._parse(line)
                    if why is not None:
                        self.skipped_lines.append(self._lines)
                        damaged.append((self._lines, why))
            self._offset += end
            if damaged:
                self._say_skipped(damaged)
            return self._runs

    def _parse(self, line: bytes) -> str | None:
        """Take one line into the runs read so far; None, or why it was skipped (in
        words: what the line held, and so what is missing from the runs)."""
        runs = self._runs
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            return "is not a whole record (cut off: a process stopped while writing it?)"
        try:
            kind = rec["kind"]
            if kind == "run":
                header = rec["header"]
                begun = runs.get(header["id"])  # (begun again: it keeps its place)
                runs[header["id"]] = JsonlRun(header, begun.num if begun else len(runs))
                return None
            if kind not in _OF_A_RUN:  # (a prune's first line; a newer agentdebug's kind)
                return None
            owner = rec["report"]["trajectory_id"] if kind == "report" else rec["run_id"]
            run = runs.get(owner)
            if run is None:
                return (
                    f"holds {_OF_A_RUN[kind]} of run {owner!r}, whose run line is missing "
                    "(lost to a damaged line before it?)"
                )
            if kind == "events":
                run.events.extend(rec["events"])
            elif kind == "finish":
                run.header["outcome"] = rec["outcome"]
                run.header["ended_at"] = rec.get("ended_at")
            elif kind == "report":  # a report saved again replaces its earlier version
                rid = rec["report"].get("id")
                reports = run.reports
                at = next((i for i, r in enumerate(reports) if r.get("id") == rid), None)
                if at is None:
                    reports.append(rec["report"])
                else:
                    reports[at] = rec["report"]
            else:
                run.label = rec["label"]
        except KeyError as exc:
            return f"lacks the field {exc.args[0]!r} its record needs"
        except TypeError:
            return "is not shaped like a record of this store"
        return None

    def _say_skipped(self, damaged: list[tuple[int, str]]) -> None:
        """One warning for the lines a read skipped, each said once per process
        (not at every read of the file, nor by every store open on it)."""
        with _SAID_LOCK:
            new = [(n, why) for n, why in damaged if (self._file, n) not in _SAID]
            _SAID.update((self._file, n) for n, _ in new)
        if not new:
            return
        shown = "; ".join(f"line {n} {why}" for n, why in new[:5])
        more = f"; and {len(new) - 5} more" if len(new) > 5 else ""
        log.warning(
            "%s: %d damaged line(s) skipped, what they held is lost: %s%s",
            self.path,
            len(new),
            shown,
            more,
        )

    def _run(self, run_id: str) -> JsonlRun:
        runs = self._scan()
        if run_id not in runs:
            raise NotFoundError(f"no run with id '{run_id}' in {self.location}")
        return runs[run_id]

    # -- the TraceStore contract ---------------------------------------------------------

    def begin_run(self, header: AgentTrajectory) -> None:
        self._append(b'{"kind":"run","header":' + header_json(header) + b"}")

    def append_events(self, run_id: str, rows: Sequence[EventRow]) -> None:
        if not rows:
            return
        self._append(
            b'{"kind":"events","run_id":'
            + orjson.dumps(run_id)
            + b',"events":['
            + b",".join(r.data for r in rows)
            + b"]}"
        )

    def finish_run(self, run_id: str, outcome: Outcome, ended_at: datetime | None) -> None:
        self._append(
            orjson.dumps(
                {
                    "kind": "finish",
                    "run_id": run_id,
                    "outcome": outcome.model_dump(mode="json"),
                    "ended_at": ended_at.isoformat() if ended_at else None,
                }
            )
        )

    def save_trajectory(self, trajectory: AgentTrajectory, label: GoldLabel | None = None) -> None:
        lines = [b'{"kind":"run","header":' + header_json(trajectory) + b"}"]
        if trajectory.events:
            lines.append(
                b'{"kind":"events","run_id":'
                + orjson.dumps(trajectory.id)
                + b',"events":['
                + b",".join(
                    e.model_dump_json(exclude_defaults=True).encode() for e in trajectory.events
                )
                + b"]}"
            )
        if label is not None:
            lines.append(
                b'{"kind":"label","run_id":'
                + orjson.dumps(trajectory.id)
                + b',"label":'
                + label.model_dump_json().encode()
                + b"}"
            )
        self._append(*lines)

    def load_trajectory(self, run_id: str) -> AgentTrajectory:
        run = self._run(run_id)
        unknown: set[str] = set()  # fields a newer agentdebug wrote (store.newer_fields)
        try:
            with gc_paused():
                try:
                    events = events_from_python(run.events)
                except ValidationError as exc:
                    events = events_without_unknown(run.events, exc, unknown)
            trajectory = header_without_unknown({**run.header, "events": events}, unknown)
        except ValueError as exc:
            raise damaged(self.location, f"run '{run_id}'", exc) from exc
        note_unknown(self.location, run_id, unknown)
        return trajectory

    def resolve_id(self, prefix: str) -> str:
        ids = [rid for rid in self._scan() if rid.startswith(prefix)]
        if prefix in ids:
            return prefix
        if not ids:
            raise NotFoundError(f"no run with id '{prefix}' in {self.location}")
        if len(ids) > 1:
            raise NotFoundError(ambiguous(prefix, ids, len(ids)))
        return ids[0]

    def list_runs(self, query: RunQuery | None = None) -> list[RunSummary]:
        return summaries(self._scan(), query or RunQuery())

    def save_report(self, report: DiagnosticReport) -> None:
        self._run(report.trajectory_id)
        self._append(b'{"kind":"report","report":' + report.model_dump_json().encode() + b"}")

    def load_reports(self, run_id: str) -> list[DiagnosticReport]:
        try:
            return [DiagnosticReport.model_validate(r) for r in self._run(run_id).reports]
        except ValueError as exc:
            raise damaged(self.location, f"a report of run '{run_id}'", exc) from exc

    def load_label(self, run_id: str) -> GoldLabel | None:
        label = self._run(run_id).label
        try:
            return GoldLabel.model_validate(label) if label else None
        except ValueError as exc:
            raise damaged(self.location, f"the label of run '{run_id}'", exc) from exc

    def write_locked(self) -> bool:
        """Whether another process holds the file's lock now (asked without waiting)."""
        if fcntl is None or self.read_only is not None:
            return False
        try:
            with open(self.path, "rb") as probe:
                fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False

    def idle(self) -> None:
        """Nothing to keep up: every append is already in the file."""

    def index_metadata(self, path: str) -> None:
        """Nothing to index: a JSON Lines store is read whole (its runs are in memory)."""
        metadata_json_path(path)  # (the same check as SQLite's)

    def delete_runs(self, run_ids: Collection[str]) -> int:
        """Delete these runs: their run, events, finish, report and label lines. The
        file is written anew without them, beside it (synced), and moved over it, so
        a crash leaves the old file or the new one, whole. The copy is made without
        the lock; under the lock every append takes (see the module's docstring)
        only the lines appended meanwhile are copied and the new file moved in, so
        another process's append waits that long only, and then lands in the new
        file. How many of the runs there were."""
        wanted = set(run_ids)
        with self._lock:
            with self._writing():  # (whether the file takes the lock at all)
                pass
            if not self._locks:
                raise StoreError(
                    f"{self.path}: runs cannot be deleted from this JSON Lines store: "
                    "its file takes no lock (flock) here, without which another "
                    "process's appends could be lost"
                )
            if not os.access(self.path.parent, os.W_OK):
                why = "this user cannot write its folder, where a prune writes the file anew"
                refused = PermissionError("runs are deleted by writing the file anew")
                raise StoreError(write_refused(self.path, why, refused))
            if not wanted:
                return 0
            try:
                # (a link's target: the link stays, and the file it names shrinks)
                rewrite = _Rewrite(self.path.resolve(), wanted)
                try:
                    with self._writing():
                        gone = rewrite.finish()
                finally:
                    rewrite.discard()
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: prune failed, the store is as it was: {exc}"
                ) from exc
            self._forget()
            if self._fh is not None:  # (on the replaced file: let go, so its space is freed)
                self._fh.close()
                self._fh = open(self.path, "a+b")  # noqa: SIM115 - held for the store's life
        return gone

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()


def _flock(fh: BinaryIO, *, exclusive: bool) -> bool:
    """Take (or, not ``exclusive``, let go of) the file's lock for appends and
    prunes; False where there is none (Windows, a mount that refuses flock):
    appends go on without it, and a prune refuses."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    if not exclusive:
        return _flock_call(fh, fcntl.LOCK_UN)
    deadline = time.monotonic() + LOCK_WAIT
    while True:  # (not a blocking wait: a prune stopped with Ctrl-Z, a hung mount)
        try:
            return _flock_call(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StoreLocked(
                    f"{fh.name}: another process has held the file's lock for over "
                    f"{LOCK_WAIT:.0f} s (a prune, stopped?); nothing was written"
                ) from None
            time.sleep(0.01)


_GENERATION = b'{"kind":"generation",'  # a prune's file's first line, its own
# what a line of each kind holds of its run (in a warning when the run's line is missing)
_OF_A_RUN = {"events": "events", "finish": "the end", "report": "a report", "label": "the label"}
_SAID: set[tuple[object, int]] = set()  # (file, line) whose damage was said in this process
_SAID_LOCK = threading.Lock()
LOCK_WAIT = 10.0  # seconds an append waits for another process's hold of the file


def _flock_call(fh: BinaryIO, op: int) -> bool:
    try:
        fcntl.flock(fh.fileno(), op)
    except BlockingIOError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL):
            return False
        raise
    return True


def _torn(fh: BinaryIO) -> bool:
    """Whether the file ``fh`` appends to ends in the middle of a line."""
    size = os.fstat(fh.fileno()).st_size
    return size > 0 and os.pread(fh.fileno(), 1, size - 1) != b"\n"


def _refused(exc: BaseException) -> bool:
    """Whether a failed write can never succeed here (a read-only mount, no permission)."""
    return isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)


def _in_place(fh: BinaryIO, path: str) -> bool:
    """Whether ``fh`` is open on the file now at ``path`` (not one a prune replaced)."""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fh.fileno())
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _owner(line: bytes) -> tuple[str | None, bool]:
    """The run a line is of, and whether it is the line that begins it; None for a
    line that does not read (a prune keeps it as it is; reading skips it)."""
    try:
        rec = orjson.loads(line)
        kind = rec["kind"]
        if kind == "run":
            owner, begins = rec["header"]["id"], True
        elif kind == "report":
            owner, begins = rec["report"]["trajectory_id"], False
        else:
            owner, begins = rec["run_id"], False
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None, False
    return (owner, begins) if isinstance(owner, str) else (None, False)


class _Rewrite:
    """``path`` written anew without the lines of the runs in ``wanted``, to a file
    beside it: made with what the file holds now (no lock needed), then
    :meth:`finish`, under the lock, adds what was appended since and moves the new
    file over the old one, with its permissions (and owner, where this user may)."""

    def __init__(self, path: Path, wanted: set[str]) -> None:
        self.path, self.wanted = path, wanted
        self.gone: set[str] = set()
        fd, self.temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".prune", dir=path.parent)
        self.out: BinaryIO | None = os.fdopen(fd, "wb")
        try:
            self._begin()
            self.source, self.copied = self._copy(0, whole_lines=True)
        except BaseException:
            self.discard()
            raise

    def _begin(self) -> None:
        """The new file's first line, its own (see ``JSONLStore._scan``)."""
        assert self.out is not None
        self.out.write(b'{"kind":"generation","id":"' + uuid.uuid4().hex.encode() + b'"}\n')

    def _copy(self, start: int, *, whole_lines: bool) -> tuple[tuple[int, int], int]:
        """Copy the file's lines from offset ``start`` (a line being written, when
        ``whole_lines``, is left for later); (the file's identity, where it stopped)."""
        assert self.out is not None
        with open(self.path, "rb") as src:
            st = os.fstat(src.fileno())
            src.seek(start)
            at = start
            for line in src:
                if not line.endswith(b"\n"):
                    if whole_lines:
                        break
                    line += b"\n"  # (a torn end: the next record starts a line of its own)
                at += len(line)
                if line.startswith(_GENERATION):  # (the file's, made by an earlier prune)
                    continue
                owner, begins = _owner(line)
                if owner is not None and owner in self.wanted:
                    if begins:
                        self.gone.add(owner)
                    continue
                self.out.write(line)
        return (st.st_dev, st.st_ino), at

    def finish(self) -> int:
        """Under the lock: the rest, then the move. How many runs went."""
        assert self.out is not None
        now = os.stat(self.path)
        if (now.st_dev, now.st_ino) != self.source:  # another prune moved its file in
            self.out.seek(0)
            self.out.truncate()
            self.gone.clear()
            self._begin()
            self.copied = 0
        self._copy(self.copied, whole_lines=False)
        self.out.flush()
        os.fsync(self.out.fileno())
        self.out.close()
        self.out = None
        os.chmod(self.temp, stat.S_IMODE(now.st_mode))
        with contextlib.suppress(OSError):  # (only the superuser may give it away)
            os.chown(self.temp, now.st_uid, now.st_gid)
        os.replace(self.temp, self.path)
        self.temp = ""
        with contextlib.suppress(OSError):  # (the move itself, durable)
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        return len(self.gone)

    def discard(self) -> None:
        """What is left of an unfinished rewrite: its file beside the store's."""
        if self.out is not None:
            self.out.close()
            self.out = None
        if self.temp:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
