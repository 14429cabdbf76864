"""Size limits shared by capture and import, each settable from the environment."""

from __future__ import annotations

import os

#: The largest single event, in bytes of JSON. Capture truncates an event above it
#: (and says so in the event's metadata); an importer refuses the file instead,
#: since a trajectory read from a file is evidence and must not be silently cut.
MAX_EVENT_BYTES_ENV = "AGENTDEBUG_MAX_EVENT_BYTES"
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

#: The largest file read at all; bigger files are refused before they are loaded.
MAX_FILE_BYTES_ENV = "AGENTDEBUG_MAX_IMPORT_BYTES"
DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        return default
    return value if value > 0 else default


def max_event_bytes() -> int:
    """``$AGENTDEBUG_MAX_EVENT_BYTES`` or 16 MiB."""
    return _env_int(MAX_EVENT_BYTES_ENV, DEFAULT_MAX_EVENT_BYTES)


def max_file_bytes() -> int:
    """``$AGENTDEBUG_MAX_IMPORT_BYTES`` or 200 MiB."""
    return _env_int(MAX_FILE_BYTES_ENV, DEFAULT_MAX_FILE_BYTES)
