"""Which stored runs a prune deletes: a pure choice over run summaries.

The unit is a *family*: a run with its rerun branches (``parent_id``, branches of
branches too) and the runs that continue it (``metadata["continues"]``: a resume
served by another worker, a retry), linked either way. A family goes only when
every run in it matches, so a kept branch never points at a deleted original, and
a resumed run is never read without the run it continues (the diagnosis reads
them together). A run still ``running`` never matches: its writer may be adding
to it, or its process died and it is evidence of that.

:func:`select` decides; the store's ``delete_runs`` deletes (see ``agentdebug
prune``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agentdebug.schema.trace import aware
from agentdebug.store.base import RunSummary

RUNNING = "running"


@dataclass(frozen=True)
class Retention:
    """What a prune may delete. Every option narrows the choice; none given at all
    would choose every run that is not running (the CLI refuses that)."""

    older_than: timedelta | None = None  # runs that ended (else started) before now minus it
    statuses: Collection[str] = ()  # only runs with one of these statuses (empty: any)
    keep_failed: bool = False  # never runs whose status is failure
    keep_last: int | None = None  # never the newest N runs (by start) of the statuses

    def __post_init__(self) -> None:
        if self.keep_last is not None and self.keep_last < 0:
            raise ValueError(f"Retention(keep_last={self.keep_last}): must be 0 or more")
        if self.older_than is not None and self.older_than < timedelta(0):
            raise ValueError(f"Retention(older_than={self.older_than}): must not be negative")

    @property
    def selects(self) -> bool:
        """Whether anything narrows the choice (``keep_failed`` alone does not)."""
        return self.older_than is not None or bool(self.statuses) or self.keep_last is not None


@dataclass(frozen=True)
class PrunePlan:
    """The runs a prune deletes and the ones it keeps only for their family."""

    doomed: list[RunSummary] = field(default_factory=list)  # newest first
    families: int = 0  # families of the doomed runs
    # runs that match but stay, because another run of their family does not
    held: list[RunSummary] = field(default_factory=list)
    held_families: int = 0

    @property
    def run_ids(self) -> list[str]:
        return [run.id for run in self.doomed]

    def batches(self, size: int) -> list[list[str]]:
        """The doomed runs' ids in batches of about ``size`` runs, each of whole
        families (a family larger than ``size`` is a batch of its own): deleted a
        batch at a time, a family is never half gone, and a long prune does not hold
        the store's write lock for all of its runs at once."""
        out: list[list[str]] = []
        for family in _families(self.doomed).values():
            if not out or len(out[-1]) + len(family) > size:
                out.append([])
            out[-1].extend(run.id for run in family)
        return [batch for batch in out if batch]


def _when(value: datetime | None) -> datetime | None:
    return aware(value) if value is not None else None


def _newest_first(runs: Sequence[RunSummary]) -> list[RunSummary]:
    """By start, newest first, runs with no start last: the order both stores list
    runs in. Runs with the same start, or none, stay in the order given: the
    store's, the run added last first."""
    return sorted(
        runs,
        key=lambda r: (r.started_at is not None, r.started_at.timestamp() if r.started_at else 0),
        reverse=True,
    )


def matches(run: RunSummary, retention: Retention, now: datetime) -> bool:
    """Whether ``run`` on its own may go (not counting ``keep_last`` or its family)."""
    if run.status == RUNNING:
        return False
    if retention.statuses and run.status not in retention.statuses:
        return False
    if retention.keep_failed and run.status == "failure":
        return False
    if retention.older_than is not None:
        when = _when(run.ended_at) or _when(run.started_at)
        if when is None or when >= aware(now) - retention.older_than:
            return False  # (a run of unknown age is kept)
    return True


def _families(runs: Sequence[RunSummary]) -> dict[str, list[RunSummary]]:
    """The runs grouped into families (by a representative id), each in the order
    given; a link to a run not among ``runs`` (deleted, another store) is ignored."""
    by_id = {run.id: run for run in runs}
    root: dict[str, str] = {rid: rid for rid in by_id}

    def find(rid: str) -> str:
        while root[rid] != rid:
            root[rid] = root[root[rid]]
            rid = root[rid]
        return rid

    for run in runs:
        for other in (run.parent_id, run.continues):
            if other is not None and other in by_id:
                a, b = find(run.id), find(other)
                if a != b:
                    root[b] = a
    out: dict[str, list[RunSummary]] = {}
    for run in runs:
        out.setdefault(find(run.id), []).append(run)
    return out


def select(runs: Sequence[RunSummary], retention: Retention, now: datetime) -> PrunePlan:
    """The runs of ``runs`` (every run in the store, as it lists them: newest first)
    that a prune with ``retention`` deletes at ``now``, whole families only."""
    ordered = _newest_first(runs)
    place = {run.id: at for at, run in enumerate(ordered)}

    def in_order(chosen: list[RunSummary]) -> list[RunSummary]:
        return sorted(chosen, key=lambda run: place[run.id])

    # the newest N of the runs the statuses name (of all, without --status): "--status
    # success --keep-last 1000" keeps the newest 1,000 successes
    kinds = [run for run in ordered if not retention.statuses or run.status in retention.statuses]
    kept_newest = {run.id for run in kinds[: retention.keep_last or 0]}
    ok = {run.id for run in ordered if run.id not in kept_newest and matches(run, retention, now)}
    doomed: list[RunSummary] = []
    held: list[RunSummary] = []
    families = held_families = 0
    for family in _families(ordered).values():
        going = [run for run in family if run.id in ok]
        if not going:
            continue
        if len(going) == len(family):
            doomed += family
            families += 1
        else:
            held += going
            held_families += 1
    return PrunePlan(
        doomed=in_order(doomed),
        families=families,
        held=in_order(held),
        held_families=held_families,
    )
