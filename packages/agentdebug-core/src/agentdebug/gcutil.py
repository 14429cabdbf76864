"""Pausing the cyclic garbage collector around bulk object creation.

Building a 100,000-event trajectory allocates hundreds of thousands of containers;
the collector would otherwise rescan all of them many times over (three quarters
of the load time, measured). None of these objects form cycles, so pausing is safe.

When the pause ends, the collector's youngest generation holds everything built
during it, and the next allocation anywhere triggers a pass over all of it (a
tenth of loading a 100,000-event run, measured), then another when it moves up a
generation. ``promote=True`` moves it straight to the oldest generation instead,
where only the occasional full collection looks at it: what a long-lived result
such as a loaded run would reach anyway. That is done with ``gc.freeze()`` and
``gc.unfreeze()`` (two list splices), so it also promotes whatever else is young
at that moment; it is skipped when the program froze objects itself, so as not
to unfreeze them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(*, promote: bool = False) -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if promote and was_enabled and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()
