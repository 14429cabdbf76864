"""The store contract and the helpers every backend shares.

Capture streams a run into a store in three moves (``begin_run``, ``append_events``
in batches, ``finish_run``); importers save a finished trajectory at once. Events
travel as JSON bytes already shaped like :class:`AgentEvent`, so a backend stores
them without knowing the schema and loads a run by validating its JSON in chunks
(:func:`assemble`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol, overload

import orjson
from pydantic import ValidationError

from agentdebug.errors import StoreError
from agentdebug.gcutil import gc_paused
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    DiagnosticReport,
    GoldLabel,
    Outcome,
)
from agentdebug.schema.trace import events_from_json
from agentdebug.store.newer_fields import (
    events_without_unknown,
    header_without_unknown,
    note_unknown,
)


class EventRow(NamedTuple):
    """One event on its way into a store: its position, its agent, its JSON document.

    A named tuple, not a dataclass: capture builds one per event off the hot path,
    and tuple construction is several times cheaper. Everything else about the
    event (type, step, ids) lives in ``data``, which is shaped like AgentEvent.
    """

    seq: int
    agent_name: str | None
    data: bytes


class EventBatch(Sequence[EventRow]):
    """Events of one run with consecutive sequence numbers (``first``, ``first + 1``,
    ...), as one JSON array: what capture's writer hands a store.

    The writer builds the array with one serialisation, and a store that can take
    the array whole (SQLite, which splits it with ``json_each`` without holding
    Python's GIL) never makes a Python object per event. For any other store it is
    an ordinary sequence of :class:`EventRow`, made on first use.
    """

    __slots__ = ("_rows", "agents", "array", "first", "length")

    def __init__(self, first: int, length: int, array: bytes, agents: set[str]) -> None:
        self.first = first
        self.length = length
        self.array = array
        self.agents = agents  # the agent names of these events
        self._rows: list[EventRow] | None = None

    def rows(self) -> list[EventRow]:
        if self._rows is None:
            self._rows = [
                EventRow(self.first + i, doc.get("agent_name"), orjson.dumps(doc))
                for i, doc in enumerate(orjson.loads(self.array))
            ]
        return self._rows

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> EventRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[EventRow]: ...

    def __getitem__(self, index: int | slice) -> EventRow | list[EventRow]:
        return self.rows()[index]

    def __iter__(self) -> Iterator[EventRow]:
        return iter(self.rows())


@dataclass(frozen=True)
class LaterBlame:
    """A later round of the closed loop whose branch passed, where round 1's test of
    the run's root cause did not confirm it: the blame that did work."""

    round: int
    branch_id: str  # the branch that passed
    run_id: str  # the run it forked (a branch of the original, by then)
    agent: str | None  # the agent and step it corrected in that run
    step: int | None


# How the closed loop tells it on the original's report (in the verification's
# detail, see agentdebug.rerun.record.note_later_success): a store keeps it apart
_LATER = re.compile(
    r"round (\d+)'s branch (.+?), which corrected (?:(.+?) at )?step (-?\d+) of run (.+?), "
    r"succeeded"
)


def verdict_of(report: dict[str, Any]) -> tuple[bool | None, LaterBlame | None]:
    """What a rerun said of a report's root cause, from the report as JSON (its
    ``verification`` and ``verified_by_rerun``): True verified by rerun, False not
    confirmed, None not tried; and, when not confirmed, the later round whose
    branch passed (if one did)."""
    verification = report.get("verification")
    status = verification.get("status") if isinstance(verification, dict) else None
    if status not in ("verified_by_rerun", "not_confirmed"):
        verified = report.get("verified_by_rerun")
        return (verified if isinstance(verified, bool) else None), None
    if status == "verified_by_rerun":
        return True, None
    later = verification.get("later") if isinstance(verification, dict) else None
    if isinstance(later, dict):
        try:
            step = later.get("step")
            return False, LaterBlame(
                int(later["round"]),
                str(later["branch_id"]),
                str(later["run_id"]),
                later.get("agent") if isinstance(later.get("agent"), str) else None,
                int(step) if isinstance(step, int) else None,
            )
        except (KeyError, TypeError, ValueError):
            pass
    # (a report written before ``later`` was kept: the detail's sentence)
    detail = verification.get("detail") if isinstance(verification, dict) else None
    found = list(_LATER.finditer(detail)) if isinstance(detail, str) else []
    if not found:
        return False, None
    round_, branch, agent, step, run = found[-1].groups()
    return False, LaterBlame(int(round_), branch, run, agent, int(step))


@dataclass(frozen=True)
class RunSummary:
    """One line of ``agentdebug list``."""

    id: str
    goal: str | None
    framework: str | None
    status: str
    started_at: datetime | None
    ended_at: datetime | None
    n_events: int
    agents: list[str]
    parent_id: str | None
    failure_modes: list[str]
    root_agent: str | None
    root_step: int | None
    continues: str | None = None  # the run this one picked up after (metadata["continues"])
    # the process that recorded it (metadata["recorded_by"]: host, pid, boot, machine,
    # pidns, started; see agentdebug.capture.process)
    recorded_by: dict[str, str] | None = None
    # the file it was imported from (metadata["imported_from"], an absolute path)
    imported_from: str | None = None
    # the run it was recorded within, a sub-run (metadata["within_run"]; capture.nesting)
    within: str | None = None
    # what a rerun said of the root cause (its latest report's): True verified by
    # rerun, False not confirmed, None not tried (in a SQLite store, also for a report
    # stored by an agentdebug from before this was kept, until it is stored again)
    verified: bool | None = None
    later: LaterBlame | None = None  # when not confirmed: a later round's blame that worked


CONTINUES = "continues"  # the metadata key naming the run a run picked up after
# With CONTINUES: the run goes on from before this step of the run it continues, not
# from where that run stopped (a fork of its history, as LangGraph's time travel
# makes), so its history holds that run's events before the step only.
CONTINUES_BEFORE = "continues_before_step"


def ambiguous(prefix: str, ids: Sequence[str], count: int) -> str:
    """What a run id prefix that several runs' ids start with says: the first few,
    and how many match in all."""
    more = f" and {count - 5} more" if count > 5 else ""
    return (
        f"run id '{prefix}' is ambiguous: {count} runs' ids start with it "
        f"({', '.join(ids[:5])}{more}); give more of the id"
    )


def continues_of(metadata: Any) -> str | None:
    """The run whose run's ``metadata`` this is continues, if it names one."""
    value = metadata.get(CONTINUES) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


RECORDED_BY = "recorded_by"  # the metadata key naming the process that recorded a run
IMPORTED_FROM = "imported_from"  # the metadata key naming the file a run was imported from


def within_of(metadata: Any) -> str | None:
    """The run a sub-run's ``metadata`` says it was recorded within, if any."""
    value = metadata.get("within_run") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


def imported_from(metadata: Any) -> str | None:
    """The file a run's ``metadata`` says it was imported from, if any."""
    value = metadata.get(IMPORTED_FROM) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


def recorder_of(metadata: Any) -> dict[str, str] | None:
    """The ``recorded_by`` stamp of a run's metadata (see agentdebug.capture.process),
    if it has a well-formed one."""
    value = metadata.get(RECORDED_BY) if isinstance(metadata, dict) else None
    if not isinstance(value, dict) or not all(
        isinstance(value.get(k), str) for k in ("host", "pid")
    ):
        return None
    return {k: v for k, v in value.items() if isinstance(v, str)}


@dataclass(frozen=True)
class RunQuery:
    """Filters for listing runs; every field left None matches everything."""

    status: str | None = None
    framework: str | None = None
    agent: str | None = None
    failure_mode: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    parent_id: str | None = None  # the branches of this run
    descends_from: str | None = None  # every rerun of this run: branches of branches too
    # runs whose metadata has these values, by dotted path ("langgraph.thread_id"):
    # a string, or a tuple of strings for a list of them
    metadata: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    ids: tuple[str, ...] | None = None  # these runs only (exact ids)
    limit: int | None = 100

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, tuple):
            raise ValueError(
                "RunQuery(metadata=...) takes a tuple of (dotted path, value) pairs, not "
                f"{type(self.metadata).__name__}"
            )
        for pair in self.metadata:
            path, value = pair if isinstance(pair, tuple) and len(pair) == 2 else ("", None)
            texts = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
            if not META_PATH.fullmatch(str(path)) or not (isinstance(value, str) or texts):
                raise ValueError(
                    f"RunQuery(metadata=...): {pair!r} is not a dotted path of names "
                    "(letters, digits, _) with a string (or a tuple of strings) value"
                )


META_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def metadata_json_path(path: str) -> str:
    """The SQLite JSON path of a run header's metadata at dotted ``path`` (a path
    of names, as ``RunQuery`` checks: it can be written into SQL as it is)."""
    if not META_PATH.fullmatch(path):
        raise ValueError(f"{path!r} is not a dotted path of names (letters, digits, _)")
    return "$.metadata." + ".".join(f'"{p}"' for p in path.split("."))


def metadata_value(metadata: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a run's metadata (None if absent), a list
    as a tuple (as ``RunQuery.metadata`` gives one)."""
    value = metadata
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return tuple(value) if isinstance(value, list) else value


class TraceStore(Protocol):
    """Where trajectories, reports and benchmark labels live.

    Optional, and so not a member here (a store of one's own may lack it; a caller
    looks it up with ``getattr`` and says clearly that the store cannot do it):

    ``delete_runs(run_ids: Collection[str]) -> int``
        Delete these runs whole: header, events, finish, reports, label and any
        per-run index rows, atomically (all of a call or none of it); returns how
        many of them were in the store (an unknown id is no error). A store open
        read-only refuses, as for any write. The SQLite and JSON Lines stores have
        it; ``agentdebug prune`` uses it, choosing whole families of runs
        (:mod:`agentdebug.store.retention`).
    """

    location: str

    def begin_run(self, header: AgentTrajectory) -> None: ...

    def append_events(self, run_id: str, rows: Sequence[EventRow]) -> None: ...

    def finish_run(self, run_id: str, outcome: Outcome, ended_at: datetime | None) -> None: ...

    def save_trajectory(
        self, trajectory: AgentTrajectory, label: GoldLabel | None = None
    ) -> None: ...

    def load_trajectory(self, run_id: str) -> AgentTrajectory: ...

    def resolve_id(self, prefix: str) -> str: ...

    def list_runs(self, query: RunQuery | None = None) -> list[RunSummary]: ...

    def save_report(self, report: DiagnosticReport) -> None: ...

    def load_reports(self, run_id: str) -> list[DiagnosticReport]: ...

    def load_label(self, run_id: str) -> GoldLabel | None: ...

    def idle(self) -> bool | None:
        """Called by the background writer when it has nothing queued: a moment
        for upkeep that should not slow a write down. False when the upkeep is not
        done (the writer calls again at its next wake); True or None when it is."""

    def close(self) -> None: ...


def header_json(trajectory: AgentTrajectory) -> bytes:
    """The trajectory without its events: what the run row keeps."""
    return trajectory.model_dump_json(exclude={"events"}).encode()


def event_row(seq: int, event: AgentEvent) -> EventRow:
    return EventRow(seq, event.agent_name, event.model_dump_json(exclude_defaults=True).encode())


class StoreLocked(StoreError):
    """A write another connection kept out (SQLite's write lock held by another
    process, a JSON Lines file's lock): the same write may succeed later."""


class StoreReadOnly(StoreError):
    """A write to a store this process cannot write: it will not succeed later."""


class EventsDamaged(ValueError):
    """A stored event does not validate; ``first`` is the run position of the
    first event in the part that was being read (its errors count from there)."""

    def __init__(self, error: ValidationError, first: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.first = first


def assemble(header: bytes, chunks: Iterable[bytes], location: str = "") -> AgentTrajectory:
    """A trajectory from its stored header and its events' JSON, in chunks: each
    chunk the comma-separated documents of consecutive events.

    Read chunk by chunk (a few thousand events each, see the SQLite store) rather
    than as one document: validating one array of a whole run makes pydantic hold
    a parse of all of it at once, and on a fresh process every new page of memory
    costs a page fault (about 2.5 us each here), a third of the time of loading a
    100,000-event run. Chunks reuse the same memory.

    Fields a newer agentdebug added are left out, said once (see
    :mod:`agentdebug.store.newer_fields`; ``location`` names the store there)."""
    events: list[AgentEvent] = []
    unknown: set[str] = set()
    with gc_paused():
        for chunk in chunks:
            array = b"[" + chunk + b"]"
            try:
                events += events_from_json(array)
            except ValidationError as exc:
                try:
                    events += events_without_unknown(array, exc, unknown)
                except ValidationError as still:
                    raise EventsDamaged(still, len(events)) from still
    head: dict[str, Any] = orjson.loads(header)
    head["events"] = events
    trajectory = header_without_unknown(head, unknown)
    note_unknown(location, trajectory.id, unknown)
    return trajectory


def damaged(location: str, what: str, exc: Exception) -> StoreError:
    """One line saying which stored record does not read back, and why."""
    first_event = 0
    if isinstance(exc, EventsDamaged):
        first_event = exc.first
        exc = exc.error
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        first: dict[str, Any] = dict(errors[0]) if errors else {}
        loc = list(first.get("loc", ()))
        if loc and isinstance(loc[0], int):
            loc[0] += first_event  # the event's position in the run
        where = ".".join(str(p) for p in loc)
        why = f"field '{where}': {first.get('msg', 'invalid')}" if where else str(first.get("msg"))
        if not where and first_event:  # not JSON at all: its column counts from here
            why = f"the events from position {first_event} on: {why}"
        if len(errors) > 1:
            why += f"; and {len(errors) - 1} more problem(s)"
    else:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return StoreError(f"{location}: {what} is stored damaged: {why}")


def default_home() -> Path:
    """``$AGENTDEBUG_HOME`` or ``./.agentdebug``."""
    env = os.environ.get("AGENTDEBUG_HOME")
    return Path(env) if env else Path.cwd() / ".agentdebug"


def continues_before(metadata: Any) -> int | None:
    """The step of the continued run before which a run forked from it (None: the
    run goes on from where that run stopped)."""
    value = metadata.get(CONTINUES_BEFORE) if isinstance(metadata, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
