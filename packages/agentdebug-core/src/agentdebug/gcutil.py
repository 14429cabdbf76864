"""Pausing the cyclic garbage collector around bulk object creation.

Building a 100,000-event trajectory allocates hundreds of thousands of containers;
the collector would otherwise rescan all of them many times over (three quarters
of the load time, measured). None of these objects form cycles, so pausing is safe.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    try:  # disabled inside: a signal right after it still re-enables
        gc.disable()
        yield
    finally:
        if was_enabled:
            gc.enable()
