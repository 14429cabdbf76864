"""`agentdebug prune`: delete old runs from the store, a whole family at a time.

A service records every run and nothing else deletes one, so a store grows for as
long as the service runs (about 4.7 KB a small run). ``prune`` chooses with
:func:`agentdebug.store.retention.select` (a run goes with its reruns and the runs
that continue it, and only when all of them match) and deletes with the store's
``delete_runs``. Deleting is not one command away by accident: a selector is
required, and so is a confirmation (on a terminal) or ``--yes``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import click

from agentdebug.capture.process import abandoned
from agentdebug.cli.app import Ctx, cli, pass_ctx
from agentdebug.cli.values import parse_when
from agentdebug.errors import AgentDebugError, InputError, StoreError
from agentdebug.schema import OutcomeStatus
from agentdebug.store import JSONLStore, RunQuery, RunSummary, SQLiteStore, TraceStore
from agentdebug.store.access import write_refused
from agentdebug.store.retention import PrunePlan, Retention, select
from agentdebug.store.sqlite_prune import Vacuumed, file_bytes
from agentdebug.store.sqlite_prune import vacuum as vacuum_file

# Runs a SQLite store deletes per transaction (whole families): a long prune lets
# the service's writers in between, rather than holding the write lock throughout.
SQLITE_BATCH = 1000


def _families(n: int) -> str:
    return f"{n} {'family' if n == 1 else 'families'}"


def _size(n: int) -> str:
    amount = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def _on_disk(store: TraceStore) -> int | None:
    """What the store's files take, where agentdebug knows them (None elsewhere)."""
    if isinstance(store, SQLiteStore):
        return file_bytes(store.path)
    if isinstance(store, JSONLStore):
        return Path(store.path).stat().st_size
    return None


def _retention(
    older_than: str | None,
    statuses: tuple[str, ...],
    keep_failed: bool,
    keep_last: int | None,
    now: datetime,
) -> Retention:
    before = parse_when(older_than, "--older-than")
    age = max(now - before, timedelta(0)) if before is not None else None
    retention = Retention(
        older_than=age, statuses=frozenset(statuses), keep_failed=keep_failed, keep_last=keep_last
    )
    if not retention.selects:
        raise InputError(
            "prune needs --older-than AGE, --keep-last N or --status STATUS: with none of "
            "them every finished run would be deleted"
        )
    if keep_failed and set(statuses) == {"failure"}:
        raise InputError("--keep-failed with --status failure selects nothing", field="--status")
    return retention


def _list(runs: list[RunSummary]) -> None:
    click.echo(f"{'RUN':<28} {'STATUS':<8} {'ENDED (UTC)':<16}  GOAL")
    for run in runs:
        when = run.ended_at or run.started_at  # (a run that never ended: its start, said)
        shown = when.strftime("%Y-%m-%d %H:%M") if when else "-"
        if run.ended_at is None and when is not None:
            shown = f"{shown} (start)"
        goal = " ".join((run.goal or "").split())
        if run.parent_id:
            goal = f"[branch of {run.parent_id}] {goal}"
        elif run.continues:
            goal = f"[continues {run.continues}] {goal}"
        click.echo(f"{run.id:<28} {run.status:<8} {shown:<16}  {goal[:80]}")


def _as_settled(runs: list[RunSummary]) -> list[RunSummary]:
    """The runs as a prune settles them before it chooses: an abandoned run (its
    process known gone) ended, outcome unknown. A dry run writes nothing, so it
    chooses from this view, and lists what the prune would delete."""
    found = abandoned(runs)
    unknown = OutcomeStatus.UNKNOWN.value
    return [replace(run, status=unknown) if run.id in found else run for run in runs]


def _held(plan: PrunePlan) -> str:
    if not plan.held:
        return ""
    return (
        f"; {len(plan.held)} matching run(s) kept, in {_families(plan.held_families)} "
        "with a run that does not match"
    )


def _deleter(store: TraceStore) -> Callable[[list[str]], int]:
    """The store's ``delete_runs`` (optional in the TraceStore protocol)."""
    delete = getattr(store, "delete_runs", None)
    if not callable(delete):
        raise AgentDebugError(
            f"{store.location}: this store ({type(store).__name__}) cannot delete runs "
            "(it has no delete_runs); nothing was deleted"
        )
    return cast(Callable[[list[str]], int], delete)


def _delete(store: TraceStore, delete: Callable[[list[str]], int], plan: PrunePlan) -> int:
    if isinstance(store, SQLiteStore):
        return sum(int(delete(batch)) for batch in plan.batches(SQLITE_BATCH))
    return int(delete(plan.run_ids))  # (a JSON Lines store writes its file anew: once)


@cli.command()
@click.option(
    "--older-than",
    metavar="AGE",
    help="Runs that ended (or, not ended, started) longer ago than this: 30d, 12h, 2w, "
    "or before an ISO date.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["success", "failure", "unknown"]),
    help="Only runs with this status (repeatable). Running runs are never pruned.",
)
@click.option("--keep-failed", is_flag=True, help="Never prune a failed run (nor its family).")
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    metavar="N",
    help="Always keep the N newest runs (of the --status given, else of all), with their families.",
)
@click.option("--dry-run", is_flag=True, help="List the runs that would go; delete nothing.")
@click.option("--yes", is_flag=True, help="Delete without asking (needed without a terminal).")
@click.option(
    "--vacuum",
    is_flag=True,
    help="SQLite: give the freed space back to the disk (rewrites the file; writers wait).",
)
@pass_ctx
def prune(
    obj: Ctx,
    older_than: str | None,
    statuses: tuple[str, ...],
    keep_failed: bool,
    keep_last: int | None,
    dry_run: bool,
    yes: bool,
    vacuum: bool,
) -> None:
    """Delete runs from the store, with their events, reports and labels.

    A run goes together with its family (its reruns, branches of branches, and the
    runs that continue it), and only when every run of the family matches: a kept
    rerun never points at a deleted original. Runs still running are never pruned.
    Give at least one of --older-than, --keep-last and --status.

    \b
      agentdebug prune --older-than 30d --dry-run
      agentdebug prune --older-than 7d --status success --keep-last 100 --yes
    """
    now = datetime.now(UTC)
    retention = _retention(older_than, statuses, keep_failed, keep_last, now)
    asking = not dry_run and not yes
    if asking and not _is_terminal():
        raise InputError(
            "no terminal to confirm on: add --yes to delete without asking "
            "(or --dry-run to list what would go)"
        )
    store = obj.existing_store if dry_run else obj.settled_store  # (a dry run writes nothing)
    closed = getattr(store, "read_only", None)
    if closed and not dry_run:
        refused = PermissionError("a prune deletes runs")
        raise StoreError(write_refused(Path(store.location), str(closed), refused))
    runs = store.list_runs(RunQuery(limit=None))
    plan = select(_as_settled(runs) if dry_run else runs, retention, now)
    if dry_run:
        if plan.doomed:
            _list(plan.doomed)
        click.echo(
            f"would prune {len(plan.doomed)} run(s) in {_families(plan.families)} "
            f"from {store.location}{_held(plan)} (dry run: nothing deleted)"
        )
        return
    compact = vacuum and isinstance(store, SQLiteStore)  # (even with no run to delete now)
    if not plan.doomed and not compact:
        click.echo(f"nothing to prune in {store.location}{_held(plan)}")
        return
    delete = _deleter(store)
    if asking and plan.doomed:
        click.confirm(
            f"Delete {len(plan.doomed)} run(s) in {_families(plan.families)} "
            f"from {store.location}?",
            abort=True,
        )
    before = _on_disk(store)
    gone = _delete(store, delete, plan) if plan.doomed else 0
    freed = ""
    vacuumed = None
    if isinstance(store, SQLiteStore):
        if vacuum:
            vacuumed = vacuum_file(store.path)
        else:
            freed = "; the file keeps its size (SQLite reuses the space; --vacuum frees it)"
    elif vacuum and not isinstance(store, JSONLStore):  # (a JSON Lines store is rewritten)
        click.echo(f"Note: --vacuum: agentdebug cannot vacuum {store.location}", err=True)
    after = _on_disk(store)
    if vacuumed is not None:
        freed = _vacuum_said(vacuumed, before, after)
    elif before is not None and after is not None and not freed:
        freed = _freed(before, after)
    done = (
        f"pruned {gone} run(s) in {_families(plan.families)} from"
        if gone
        else "nothing to prune in"
    )
    click.echo(f"{done} {store.location}{_held(plan)}{freed}")


def _grew(before: int | None, after: int | None) -> str:
    """What other processes wrote while the prune ran, when the files grew."""
    if before is None or after is None or after <= before:
        return ""
    return (
        f"; the store grew by {_size(after - before)} all the same: other processes "
        "wrote runs while it pruned"
    )


def _freed(before: int, after: int) -> str:
    """A JSON Lines store rewritten: what its file gave back, or that it grew."""
    return f"; {_size(before - after)} freed" if after <= before else _grew(before, after)


def _vacuum_said(done: Vacuumed, before: int | None, after: int | None) -> str:
    """What ``VACUUM`` gave back, counted in the file's pages (before, the
    difference of the files' sizes, with what a service wrote meanwhile taken
    off: 147 MB pruned read "0 B freed")."""
    text = f"; {_size(done.freed)} freed ({done.freed // done.page_size} pages fewer)"
    if not done.folded:
        text += (
            "; the write-ahead log still holds the rewritten file (a reader's snapshot "
            "held it back), so the files shrink at a later checkpoint"
        )
    return text + _grew(before, after)


def _is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
