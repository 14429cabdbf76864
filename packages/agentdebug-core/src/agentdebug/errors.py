"""Errors a user sees: each says what was wrong and where (file, line or record, field).

Where an input error is: ``lineno`` is the line of a JSON Lines file (counted from 1
as an editor counts, blank lines included); ``record`` is a place in a JSON
document (an event's or message's index in its list, counted from 0, or a span's
id); ``field`` the JSON path inside that line or record. A JSON Lines error says
"line N", a document's "record N", so neither is read as the other.

The CLI prints ``str(error)`` as one line and exits non-zero; nothing here should
need a traceback to be understood.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class AgentDebugError(Exception):
    """Base class for every error agentdebug raises on purpose."""


class InputError(AgentDebugError):
    """Bad input: a file, line, record or field that cannot be read as what it claims."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.record = record
        self.field = field
        self.lineno = lineno
        super().__init__(str(self))

    def where(self) -> str:
        parts = []
        if self.source:
            parts.append(str(self.source))
        if self.lineno is not None:
            parts.append(f"line {self.lineno}")
        if self.record is not None:
            parts.append(f"record {self.record}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message

    def located(
        self,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> InputError:
        """The same error with any missing location filled in."""
        return type(self)(
            self.message,
            source=self.source or source,
            record=self.record if self.record is not None else record,
            field=self.field or field,
            lineno=self.lineno if self.lineno is not None else lineno,
        )


class UnknownFormatError(InputError):
    """A file that no importer accepts; says why each one refused."""

    def __init__(self, source: str, refusals: Mapping[str, str]) -> None:
        self.refusals = dict(refusals)
        tried = "; ".join(f"{name}: {why}" for name, why in self.refusals.items())
        super().__init__(f"no importer recognises this file (tried {tried})", source=source)

    def located(
        self,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> InputError:
        return self


class RecordsSkipped(InputError):
    """Some records of a file holding several runs could not be read; the others
    were. An importer raises it after yielding the runs it could read, with one
    located error per record it skipped; :func:`agentdebug.io.import_source`
    fills in ``runs`` (what was read), so nothing readable is lost and nothing
    unreadable is passed over in silence."""

    def __init__(self, errors: Sequence[InputError], runs: Sequence[Any] = ()) -> None:
        self.errors = list(errors)
        self.runs: list[Any] = list(runs)
        shown = "; ".join(str(e) for e in self.errors[:3])
        more = f"; and {len(self.errors) - 3} more" if len(self.errors) > 3 else ""
        super().__init__(f"{len(self.errors)} record(s) could not be read: {shown}{more}")

    def located(
        self,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> InputError:
        errors = [e.located(source=source) for e in self.errors]
        return RecordsSkipped(errors, self.runs)


class NotFoundError(AgentDebugError):
    """An id or name that does not exist."""


class StoreError(AgentDebugError):
    """The store cannot be opened, read or written."""


class ConfigError(AgentDebugError):
    """A setting that is missing or invalid."""
