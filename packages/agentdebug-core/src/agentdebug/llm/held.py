"""When a model client stops asking, for a while: an endpoint that cannot answer
anything (a 401, 403 or 404: a key, a model name, a base URL), or one that no
attempt of a call reached (a local server not started, a wrong port).

Later calls then fail at once, unsent, instead of asking again in every later stage
of a diagnosis, or waiting through every retry again for each failing run of an app
diagnosed in-process. Both are forgotten after a while (:data:`FATAL_MEMORY`,
:data:`UNREACHABLE_MEMORY`), so a long-running process (the console, a service)
recovers once the server is fixed.
"""

from __future__ import annotations

import time

from agentdebug.llm.errors import LLMCallFailed

#: Seconds a 401/403/404 keeps a client from sending anything more.
FATAL_MEMORY = 300.0
#: Seconds a server no attempt reached keeps a client from trying it again.
UNREACHABLE_MEMORY = 30.0


def not_connected(cause: BaseException) -> bool:
    """Whether a connection error came before the server had the request (refused,
    no such host), not after (a connection it dropped: it was reached)."""
    return any(kind.__name__ == "ConnectError" for kind in type(cause).__mro__)


class Held:
    """What keeps one client from asking: the error, when, and of which kind."""

    def __init__(self) -> None:
        self._held: tuple[LLMCallFailed, float, bool] | None = None

    def hold(self, error: LLMCallFailed, *, unreached: bool) -> None:
        self._held = (error, time.monotonic(), unreached)

    def now(self) -> LLMCallFailed | None:
        """The error a call fails with now, unsent, if any (for a server not reached,
        one saying so, with how long ago)."""
        if self._held is None:
            return None
        error, when, unreached = self._held
        age = time.monotonic() - when
        if age >= (UNREACHABLE_MEMORY if unreached else FATAL_MEMORY):
            return None
        if not unreached:
            return error
        return LLMCallFailed(
            f"not sent: it could not be reached {age:.0f} s ago ({error.reason}); it is "
            f"tried again {UNREACHABLE_MEMORY:.0f} s after that",
            attempts=0,
            model=error.model,
            base_url=error.base_url,
            hint=error.hint,
        )
