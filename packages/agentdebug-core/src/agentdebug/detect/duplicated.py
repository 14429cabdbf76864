"""An action run again after a failure that left unknown whether it took effect.

A payment node calls ``gateway_charge`` and the gateway's answer times out; a
``RetryPolicy`` runs the node again and the second charge succeeds: the customer
is charged twice, since the first request had reached the gateway. A timeout or a
connection cut says nothing of whether the request was carried out, so running an
action again with the same arguments may do it twice. Without this rule the free
tier found nothing (the timeout was retried past: information, not a fault) and
guessed the first step; the fault is the repeated call
(``action.repeated_action``).

The rule keeps to what it can read for certain, in a failed run: a tool that does
something (not one that only reads: see ``claimed.py``) called with the very same
arguments again, after its call before failed the ambiguous way (a timeout, a
connection reset or closed, no response) and nothing else; a declined, refused or
rate-limited call was not carried out, and a retry of it does no harm.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.claimed import claim_patterns
from agentdebug.detect.invented import call_of
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES, tool_name
from agentdebug.schema import EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "action_repeated_after_timeout"
# a failure that leaves unknown whether the request was carried out
AMBIGUOUS = re.compile(
    r"timed? ?out|timeout|deadline exceeded|connection (?:was )?(?:reset|aborted|closed|"
    r"dropped)|reset the connection|RemoteDisconnected|broken pipe|no response|"
    r"did not respond|without a response",
    re.I,
)


def rule_action_repeated_after_timeout(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's action called again with the same arguments after a timeout."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    unknown: dict[tuple[str, str], tuple[int, str]] = {}  # (tool, args) -> (step, error)
    for event in ctx.trajectory.events:
        name = tool_name(event)
        if not name or (event.metadata.get("tool_name") is None and name == event.module):
            continue
        if event.type in RESULT_TYPES and event.id in ctx.failures:
            error = ctx.failures[event.id][1]
            call = call_of(ctx, event)
            if call is not None and AMBIGUOUS.search(error) and claim_patterns(name):
                unknown[(name, compact_json(call.input))] = (call.step_index, error)
            continue
        if event.type is not EventType.TOOL_CALL:
            continue
        args = compact_json(event.input)
        before = unknown.get((name, args))
        if before is None:
            continue
        step, error = before
        who = event.agent_name or "the agent"
        yield rule_finding(
            RULE,
            "action.repeated_action",
            event,
            f"{who} ran {name} again with the same arguments at step {event.step_index} "
            f"after its call at step {step} failed without saying whether it took effect "
            f"({shorten(error, 80)})",
            confidence=0.75,
            evidence=[quoted(event, "input", args[:300])],
            metadata={
                "fix": (
                    f"At step {event.step_index}, {who}: {name} ran again with the same "
                    f'arguments after its call at step {step} failed ("{shorten(error, 120)}"), '
                    "which does not say whether it took effect: the first may have gone "
                    "through, and this one done it twice. Make the call idempotent (an "
                    "idempotency key), or check whether the first took effect before "
                    "running it again."
                )
            },
        )
        return
