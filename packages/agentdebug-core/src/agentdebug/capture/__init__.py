"""Recording runs as they happen."""

from agentdebug.capture.debugger import AgentDebug
from agentdebug.capture.session import TraceSession, current_session, new_run_id

__all__ = ["AgentDebug", "TraceSession", "current_session", "new_run_id"]
