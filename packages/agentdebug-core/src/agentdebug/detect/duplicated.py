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
something (not one that only reads: see ``claimed.py``; nor one that sets a value,
``set_``, ``update_``, ``upsert_``, ``cancel_``..., the same done twice; nor a call
with an idempotency key or a request id) called with the very same arguments again,
and going through, after its call before failed the ambiguous way (a timeout, a
connection reset or closed, a server that gave no response; said in the error's
message or its type) and nothing else. A declined, refused or rate-limited call was
not carried out, nor one whose error says so ("not sent", "no changes were made",
"safe to retry", a connect timeout), and a retry of it does no harm; nor is a
repeat after a read of the same object (a status check that found the first had
not gone through).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import claim_patterns, tool_words
from agentdebug.detect.invented import call_of, leaves
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES, tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import clip, compact_json, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "action_repeated_after_timeout"
# a failure that leaves unknown whether the request was carried out
AMBIGUOUS = re.compile(
    r"timed? ?out|timeout|deadline exceeded|connection (?:was )?(?:reset|aborted|closed|"
    r"dropped)|reset the connection|RemoteDisconnected|broken pipe|"
    r"(?:server|gateway|upstream|host|service|api) (?:gave no|sent no|did not|didn't) "
    r"(?:response|respond)|without a response from",
    re.I,
)
# a failure that says nothing was carried out: a retry does no harm
NOT_DONE = re.compile(
    r"not sent|never sent|no changes? (?:were|was) made|nothing was (?:done|changed|charged)|"
    r"safe to retry|ConnectTimeout|connect(?:ion)? timed? ?out|timed out (?:while )?"
    r"connecting|acquiring (?:a |the )?lock",
    re.I,
)
# tool-name words of an action that is the same done twice (setting a value)
_SAFE = frozenset(
    {"set", "update", "upsert", "put", "delete", "remove", "cancel", "close", "mark", "save"}
    | {"replace", "sync", "assign", "archive", "enable", "disable"}
)
# argument names that make a repeat the same request (the fix this rule gives)
_KEYED = re.compile(r"idempoten|request_?id|dedup|client_?token|nonce", re.I)


def rule_action_repeated_after_timeout(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's action called again with the same arguments after a timeout."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    unknown: dict[tuple[str, str], tuple[int, str]] = {}  # (tool, args) -> (step, error)
    repeats: dict[str, tuple[AgentEvent, int, str]] = {}  # call id -> (call, step, error)
    for event in ctx.trajectory.events:
        name = tool_name(event)
        if not name or (event.metadata.get("tool_name") is None and name == event.module):
            continue
        if event.type in RESULT_TYPES:
            call = call_of(ctx, event)
            if call is None:
                continue
            key = (name, compact_json(call.input))
            if event.id not in ctx.failures:
                repeated = repeats.get(call.id)
                if repeated is not None:  # (the repeat went through: done twice)
                    yield _finding(*repeated, name)
                    return
                unknown.pop(key, None)  # (it went through: known)
                if claim_patterns(name) is None:  # (a read: its object's state is known)
                    looked = {v for v in leaves(call.input) if len(str(v)) >= 3}
                    for other in [k for k in unknown if any(v in k[1] for v in looked)]:
                        del unknown[other]
                continue
            error = ctx.failures[event.id][1]
            kind = event.error.type if event.error is not None and event.error.type else ""
            said = error if not kind or error.startswith(kind) else f"{kind}: {error}".rstrip(": ")
            if _unknown(name, call, said):
                unknown[key] = (call.step_index, said)
            continue
        if event.type is not EventType.TOOL_CALL:
            continue
        before = unknown.pop((name, compact_json(event.input)), None)
        if before is not None:
            repeats[event.id] = (event, *before)


def _unknown(name: str, call: AgentEvent, error: str) -> bool:
    """A failure of an action ``name`` that leaves unknown whether it took effect,
    whose repeat could do it twice."""
    words = tool_words(name)
    return (
        AMBIGUOUS.search(error) is not None
        and NOT_DONE.search(error) is None
        and claim_patterns(name) is not None
        and not _SAFE.intersection(words)
        and not any(_KEYED.search(k) for k in _keys(call.input))
    )


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)


def _finding(event: AgentEvent, step: int, error: str, name: str) -> Finding:
    """The repeat of ``name`` at ``event``, after its call at ``step`` failed so."""
    args = compact_json(event.input)
    who = event.agent_name or "the agent"
    return rule_finding(
        RULE,
        "action.repeated_action",
        event,
        f"{who} ran {name} again with the same arguments at step {event.step_index} "
        f"after its call at step {step} failed without saying whether it took effect "
        f"({shorten(error, 80)})",
        confidence=0.75,
        evidence=[quoted(event, "input", clip(args, 300))],
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
