"""The policy gate: a rerun changes the world only when the gate approves it.

Policies: ``never`` (suggest only), ``ask`` (a person approves on a terminal; with
no terminal attached the answer is no, never a silent yes), ``auto`` (approve),
or a callable that receives the plan and returns a bool (or ``(bool, reason)``).
Every decision is returned as a GateDecision, which the loop records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal, TextIO

from agentdebug.errors import AgentDebugError
from agentdebug.schema import GateDecision, RecoveryPlan
from agentdebug.text import visible

PolicyName = Literal["never", "ask", "auto"]
Policy = PolicyName | Callable[[RecoveryPlan], Any]
POLICIES: tuple[PolicyName, ...] = ("never", "ask", "auto")


def policy_name(policy: Policy) -> str:
    if isinstance(policy, str):
        return policy
    return f"callable:{getattr(policy, '__qualname__', type(policy).__name__)}"


def decide(
    plan: RecoveryPlan,
    policy: Policy,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> GateDecision:
    """Apply ``policy`` to ``plan``. Never raises for a policy's own failure: a
    callable that raises, or returns something other than a bool or
    ``(bool, reason)``, is a refusal that says so."""
    name = policy_name(policy)
    if callable(policy) and not isinstance(policy, str):
        try:
            verdict = policy(plan)
        except Exception as exc:
            return GateDecision(
                policy=name,
                approved=False,
                reason=f"the policy raised {type(exc).__name__}: {exc}",
                decided_by="callable",
            )
        approved, reason = (
            verdict if isinstance(verdict, tuple) and len(verdict) == 2 else (verdict, "")
        )
        if not isinstance(approved, bool):
            return GateDecision(
                policy=name,
                approved=False,
                reason=f"the policy returned {verdict!r}, not a bool or (bool, reason); refused",
                decided_by="callable",
            )
        return GateDecision(
            policy=name,
            approved=approved,
            reason=str(reason)
            or ("approved by the policy" if approved else "refused by the policy"),
            decided_by="callable",
        )
    if policy == "auto":
        return GateDecision(policy=name, approved=True, reason="policy 'auto' approves every plan")
    if policy == "never":
        return GateDecision(
            policy=name, approved=False, reason="policy 'never': the plan is a suggestion only"
        )
    if policy == "ask":  # the question goes to stderr, so stdout stays the command's output
        return _ask(plan, stdin or sys.stdin, stdout or sys.stderr)
    raise AgentDebugError(f"unknown policy '{policy}' (use one of {', '.join(POLICIES)})")


def _ask(plan: RecoveryPlan, stdin: TextIO, stdout: TextIO) -> GateDecision:
    if not _is_terminal(stdin):
        return GateDecision(
            policy="ask",
            approved=False,
            reason="policy 'ask' needs a terminal to ask on and none is attached "
            "(use policy 'auto' to approve without asking)",
        )
    notes = "".join(f"Note: {visible(note)}\n" for note in plan.notes)
    stdout.write(  # (recorded text as escapes: a directive quotes the run's errors)
        f"\nRerun from step {plan.resume_step} ({plan.strategy}) with this directive?\n"
        f"  {visible(plan.directive)}\n{notes}[y/N] "
    )
    stdout.flush()
    line = stdin.readline()
    approved = line.strip().lower() in ("y", "yes")
    return GateDecision(
        policy="ask",
        approved=approved,
        reason=f"a person answered {line.strip()!r}" if line else "no answer (end of input)",
        decided_by="human",
    )


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
