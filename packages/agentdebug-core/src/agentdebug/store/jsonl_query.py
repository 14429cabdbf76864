"""``JSONLStore.list_runs``: the runs a :class:`RunQuery` asks for, from the runs
the file holds (read whole), and their summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentdebug.schema.trace import aware
from agentdebug.store.base import (
    RunQuery,
    RunSummary,
    continues_of,
    imported_from,
    metadata_value,
    recorder_of,
    verdict_of,
    within_of,
)


@dataclass
class JsonlRun:
    """A run as the file holds it: its header, events, label and reports (as JSON),
    and its number: its place among the runs in the order they were first begun (a
    run begun again keeps it, as it keeps its row number in the SQLite store)."""

    header: dict[str, Any]
    num: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    label: dict[str, Any] | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)


def summaries(runs: dict[str, JsonlRun], q: RunQuery) -> list[RunSummary]:
    """The summaries of the runs ``q`` asks for, newest first: in the SQLite store's
    order (``started_at DESC, num DESC``), by start, then the run added last first;
    runs with no start after every run with one (SQLite's NULL sorts lowest)."""
    out: list[RunSummary] = []
    nums: dict[str, int] = {}  # (the order runs were added in, to break ties)
    below = _descendants(runs, q.descends_from) if q.descends_from else None
    chosen = runs.items()
    if q.ids is not None:  # (looked up, not scanned: an import asks once per run)
        chosen = {rid: runs[rid] for rid in q.ids if rid in runs}.items()
    for rid, run in chosen:
        if below is not None and rid not in below:
            continue
        head = run.header
        status = (head.get("outcome") or {}).get("status", "unknown")
        started = _parse_dt(head.get("started_at"))
        modes = sorted({f["mode_id"] for r in run.reports[-1:] for f in r.get("findings", [])})
        agents_in_events = {e.get("agent_name") for e in run.events} if q.agent else set()
        if q.status and status != q.status:
            continue
        if q.framework and head.get("framework") != q.framework:
            continue
        if q.agent and q.agent not in agents_in_events:
            continue
        if q.failure_mode and q.failure_mode not in modes:
            continue
        if q.since and (started is None or started < q.since):
            continue
        if q.until and (started is None or started > q.until):
            continue
        if q.parent_id and head.get("parent_id") != q.parent_id:
            continue
        meta = head.get("metadata")
        if any(not _same(metadata_value(meta, path), value) for path, value in q.metadata):
            continue
        latest = run.reports[-1] if run.reports else {}
        root = (latest.get("hypotheses") or [None])[0]
        verified, later = verdict_of(latest)
        nums[rid] = run.num
        out.append(
            RunSummary(
                id=rid,
                goal=head.get("goal"),
                framework=head.get("framework"),
                status=status,
                started_at=started,
                ended_at=_parse_dt(head.get("ended_at")),
                n_events=len(run.events),
                agents=[a["name"] for a in head.get("agents", [])],
                parent_id=head.get("parent_id"),
                failure_modes=modes,
                root_agent=root.get("agent_name") if root else None,
                root_step=root.get("step_index") if root else None,
                continues=continues_of(head.get("metadata")),
                within=within_of(head.get("metadata")),
                recorded_by=recorder_of(head.get("metadata")),
                imported_from=imported_from(head.get("metadata")),
                verified=verified,
                later=later,
            )
        )
    out.sort(
        key=lambda r: (r.started_at is not None, r.started_at.timestamp() if r.started_at else 0.0,
                       nums[r.id]),
        reverse=True,
    )  # fmt: skip
    return out[: q.limit] if q.limit else out


def _parse_dt(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return aware(datetime.fromisoformat(value)).astimezone(UTC)  # (as the model has it)
    except (TypeError, ValueError):
        return None


def _descendants(runs: dict[str, Any], root: str) -> set[str]:
    """Every run whose chain of parents reaches ``root``."""
    children: dict[str, list[str]] = {}
    for rid, run in runs.items():
        parent = run.header.get("parent_id")
        if parent:
            children.setdefault(parent, []).append(rid)
    found: set[str] = set()
    todo = list(children.get(root, ()))
    while todo:
        rid = todo.pop()
        if rid not in found:
            found.add(rid)
            todo.extend(children.get(rid, ()))
    return found


def _same(found: Any, wanted: str | tuple[str, ...]) -> bool:
    """A metadata value equal to a query's: a string to a string, a list to a tuple."""
    return found.__class__ is wanted.__class__ and found == wanted
