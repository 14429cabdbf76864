"""Values the commands read from their arguments: a time (``--since 7d``), and a run
id or filter that must not be empty."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import click

from agentdebug.errors import InputError

_RELATIVE = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(value: str | None, option: str) -> datetime | None:
    """An ISO date or an age before now (``30m``, ``2h``, ``7d``, ``2w``)."""
    if not value:
        return None
    m = _RELATIVE.match(value)
    if m:
        try:
            return datetime.now(UTC) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
        except (OverflowError, ValueError):  # (past the year 1, or too many digits: a typo)
            raise InputError(
                f"'{value}' reaches back before the year 1; give a smaller age or an ISO date",
                field=option,
            ) from None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"'{value}' is neither an ISO date (2026-11-30, 2026-11-30T12:00) nor an age (30m, 2h, 7d)",
            field=option,
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def nonempty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback refusing an empty run id or filter (``"$RUN"`` of a variable
    never set): an empty id prefix, ``--branches-of`` or filter matched every run,
    answering a question that was not asked."""
    if value is not None and not value.strip():
        if isinstance(param, click.Argument) or param.metavar == "RUN_ID":
            raise click.BadParameter("empty; give a run id (`agentdebug list` shows the runs)")
        raise click.BadParameter("empty; give a value, or leave the option out")
    return value


META_HELP = (
    "Runs whose metadata holds this text at this dotted path, as "
    "langgraph.thread_id=chat-1 (a LangGraph thread's runs); repeat for more."
)


def metadata_filters(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``--meta PATH=VALUE`` options as a run query's metadata filters (a dotted
    path into the run's metadata: ``langgraph.thread_id=chat-1``)."""
    from agentdebug.store.base import META_PATH

    out: list[tuple[str, str]] = []
    for given in values:
        path, eq, value = given.partition("=")
        path = path.strip()
        if not eq or not META_PATH.fullmatch(path):
            raise click.BadParameter(
                f"{given!r}: expected PATH=VALUE, a dotted path into the run's metadata "
                "(names of letters, digits and _), as langgraph.thread_id=chat-1",
                param_hint="--meta",
            )
        out.append((path, value))
    return tuple(out)
