"""Recovery: turn a diagnosis into a retry directive, and gate what runs.

Every recoverer is suggest-only; :func:`agentdebug.recover.gate.decide` decides
whether a plan is rerun."""

from agentdebug.recover.automanual import AutoManualRecoverer, Manual
from agentdebug.recover.base import RecoveryError, resume_point
from agentdebug.recover.critic import CriticRecoverer
from agentdebug.recover.gate import POLICIES, Policy, decide, policy_name
from agentdebug.recover.native import NativeRecoverer
from agentdebug.recover.reflexion import ReflexionRecoverer

__all__ = [
    "POLICIES",
    "AutoManualRecoverer",
    "CriticRecoverer",
    "Manual",
    "NativeRecoverer",
    "Policy",
    "RecoveryError",
    "ReflexionRecoverer",
    "decide",
    "policy_name",
    "resume_point",
]
