"""agentdebug.testing's helpers, as plugin test suites use them."""

from __future__ import annotations

import threading

import pytest
from agentdebug.testing import finishes_within


def test_finishes_within_returns_the_result_and_raises_the_error() -> None:
    assert finishes_within(5, lambda: 41 + 1) == 42

    def broken() -> None:
        raise KeyError("lost")

    with pytest.raises(KeyError, match="lost"):
        finishes_within(5, broken)


def test_finishes_within_fails_a_call_that_hangs_instead_of_waiting_for_it() -> None:
    release = threading.Event()
    with pytest.raises(AssertionError, match=r"still running after 0\.05 s"):
        finishes_within(0.05, release.wait)
    release.set()  # (the daemon thread ends)
