"""A wrap of LangGraph's classes, installed once per process, from any thread."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Once:
    """Calls ``install`` the first time it is called, under a lock: a graph starting
    in another thread meanwhile waits for the wrap (before, the flag was set ahead
    of it, and such a graph ran unwrapped). ``install`` must not raise; if it does,
    it is not tried again."""

    def __init__(self, install: Callable[[], None]) -> None:
        self._install = install
        self._done = False
        self._lock = threading.Lock()

    def __call__(self) -> None:
        if self._done:
            return
        with self._lock:
            if not self._done:
                try:
                    self._install()
                finally:
                    self._done = True
