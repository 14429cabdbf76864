"""Recording runs as they happen."""

from agentdebug.capture.current import current_session
from agentdebug.capture.debugger import AgentDebug
from agentdebug.capture.session import RunMark, TraceSession, new_run_id

__all__ = ["AgentDebug", "RunMark", "TraceSession", "current_session", "new_run_id"]
