"""The WHERE clause of ``SQLiteStore.list_runs`` for a :class:`RunQuery`."""

from __future__ import annotations

import orjson

from agentdebug.store.base import RunQuery, metadata_json_path


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
