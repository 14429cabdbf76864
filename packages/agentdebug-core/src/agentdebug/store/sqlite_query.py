"""``SQLiteStore.list_runs``: its statement (the WHERE clause for a
:class:`RunQuery`) and the :class:`RunSummary` of each row."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from agentdebug.store.base import (
    LaterBlame,
    RunQuery,
    RunSummary,
    continues_of,
    imported_from,
    metadata_json_path,
    recorder_of,
    within_of,
)
from agentdebug.store.sqlite_schema import VERDICT_COLUMNS


def list_statement(q: RunQuery, verdicts: bool) -> tuple[str, list[object]]:
    """The statement listing the runs ``q`` asks for, and its arguments; each row as
    :func:`summary_of` reads it. The run's latest report gives its root cause and
    what a rerun said of it (``verdicts``: whether the reports table has those
    columns, see ``ENSURED_COLUMNS``; empty if not)."""
    where, args = run_filters(q)
    said = (
        ", ".join(f"p.{c}" for c in VERDICT_COLUMNS)
        if verdicts
        else ", ".join("NULL" for _ in VERDICT_COLUMNS)
    )
    sql = (
        "SELECT r.id, r.goal, r.framework, r.status, r.started_at, r.ended_at, r.n_events,"
        " r.parent_id, r.header,"
        " (SELECT group_concat(DISTINCT m.mode_id) FROM report_modes m WHERE m.run_id = r.id),"
        f" p.root_agent, p.root_step, {said}"
        " FROM runs r LEFT JOIN reports p ON p.rowid = (SELECT q.rowid FROM reports q"
        "  WHERE q.run_id = r.id ORDER BY q.created_at DESC LIMIT 1)"
    )
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY r.started_at DESC, r.num DESC"
    if q.limit:
        sql += f" LIMIT {int(q.limit)}"
    return sql, args


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def summary_of(row: Sequence[Any]) -> RunSummary:
    """A row of :func:`list_statement` as a run's summary."""
    rid, goal, fw, status, started, ended, n, parent, header, modes, agent, step = row[:12]
    verified, later_round, branch, run, later_agent, later_step = row[12:]
    head = orjson.loads(header)
    meta = head.get("metadata")
    later = None
    if later_round is not None and branch is not None and run is not None:
        later = LaterBlame(int(later_round), branch, run, later_agent, later_step)
    return RunSummary(
        id=rid,
        goal=goal,
        framework=fw,
        status=status,
        started_at=_dt(started),
        ended_at=_dt(ended),
        n_events=n,
        agents=[a["name"] for a in head.get("agents", [])],
        parent_id=parent,
        failure_modes=sorted(modes.split(",")) if modes else [],
        root_agent=agent or None,
        root_step=step if agent else None,
        continues=continues_of(meta),
        within=within_of(meta),
        recorded_by=recorder_of(meta),
        imported_from=imported_from(meta),
        verified=bool(verified) if verified is not None else None,
        later=later,
    )


def run_filters(q: RunQuery) -> tuple[list[str], list[object]]:
    """The conditions on the runs table (aliased ``r``) and their arguments."""
    where: list[str] = []
    args: list[object] = []
    if q.status:
        where.append("r.status = ?")
        args.append(q.status)
    if q.framework:
        where.append("r.framework = ?")
        args.append(q.framework)
    if q.agent:
        where.append(
            "EXISTS (SELECT 1 FROM run_agents a WHERE a.agent_name = ? AND a.run_id = r.id)"
        )
        args.append(q.agent)
    if q.failure_mode:
        where.append(
            "EXISTS (SELECT 1 FROM report_modes m WHERE m.mode_id = ? AND m.run_id = r.id)"
        )
        args.append(q.failure_mode)
    if q.since:
        where.append("r.started_at >= ?")
        args.append(q.since.timestamp())
    if q.until:
        where.append("r.started_at <= ?")
        args.append(q.until.timestamp())
    if q.parent_id:
        where.append("r.parent_id = ?")
        args.append(q.parent_id)
    if q.descends_from:
        where.append(
            "r.id IN (WITH RECURSIVE d(id) AS (SELECT id FROM runs WHERE parent_id = ?"
            " UNION SELECT runs.id FROM runs JOIN d ON runs.parent_id = d.id)"
            " SELECT id FROM d)"
        )
        args.append(q.descends_from)
    if q.ids is not None:
        where.append(f"r.id IN ({','.join('?' * len(q.ids))})" if q.ids else "0")
        args.extend(q.ids)
    for path, value in q.metadata:
        # The path is written into the SQL (RunQuery lets through names only),
        # so that the expression is the one an index_metadata index holds.
        json_path = metadata_json_path(path)
        extract = f"json_extract(CAST(r.header AS TEXT), '{json_path}')"
        kind = f"json_type(CAST(r.header AS TEXT), '{json_path}')"
        if isinstance(value, tuple):  # a list: compared as minified JSON text
            where.append(f"{extract} = json(?) AND {kind} = 'array'")
            args.append(orjson.dumps(list(value)).decode())
        else:
            where.append(f"{extract} = ? AND {kind} = 'text'")
            args.append(value)
    return where, args
