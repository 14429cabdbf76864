"""Detection: finding what went wrong in a trajectory."""

from agentdebug.detect.pack import RULES, RulePack
from agentdebug.detect.rules import Rule
from agentdebug.detect.signals import classify_error, failure_of

__all__ = ["RULES", "Rule", "RulePack", "classify_error", "failure_of"]
