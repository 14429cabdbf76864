"""Whether this user may write a store's file, and what a refused write says.

A store is often read by someone who did not write it (a colleague's file, one a
service keeps under another user, a read-only mount): such a store is opened
read-only, so that everything that reads works, and a write is an error saying
why, instead of every command failing at the open.
"""

from __future__ import annotations

import os
from pathlib import Path


def not_writable(path: Path, *, folder: bool = True) -> str | None:
    """Why this process cannot write the store at ``path`` (None: it can, or the
    file is not there yet, to be made); with ``folder``, its folder counts too
    (SQLite makes its write-ahead log beside the file)."""
    if not path.exists():
        return None
    if not os.access(path, os.W_OK):
        return "this user cannot write the file"
    if folder and not os.access(path.parent, os.W_OK):
        return "this user cannot write its folder (where SQLite keeps the write-ahead log)"
    return None


def write_refused(path: Path, why: str, exc: BaseException) -> str:
    """The message for a write to a store opened read-only."""
    return (
        f"{path}: the store is open read-only ({why}), so nothing can be saved to it "
        f"({exc}); copy it somewhere writable, or give --store a writable location"
    )
