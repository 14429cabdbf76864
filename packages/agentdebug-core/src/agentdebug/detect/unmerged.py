"""A step's update that never reached the run's shared state.

In a graph framework a step returns an update and the framework merges it into the
state the next steps read. Two ways the update is lost without an error:

- **a key the state does not have.** LangGraph drops an update's key that is not a
  channel of the graph: a node that returns ``{"result": [...]}`` to a state whose
  key is ``results`` has written nothing, and the node after it reads the old value;
- **a reducer that keeps the old value.** A key merged by a function of the app's
  (``Annotated[dict, merge_prefs]``) written backwards (``{**update, **current}``:
  the stored profile wins over the customer's change) loses the update; the model
  planning the week's meals then reads the old preferences and picks chicken and
  shrimp for a customer who had just changed to vegan.

Each run fails far from that step, and the steps between worked faithfully on what
the state gave them. The rule reads the state's keys and reducers from the run's
``state_schema`` metadata (the LangGraph integration records them from the compiled
graph) and, in a failed run, blames the update (``memory.context_loss``: what the
run had, lost on the way):

- an update of a top-level step (its start recorded; not a step that ran other
  steps under it, whose end echoes their state) with a key that is none of the
  state's, when the key is a near miss of one (``result`` for ``results``,
  ``Summary`` for ``summary``) or the failure's reason names the key;
- an update with a key merged by a reducer of the app's (not ``add_messages``),
  that no later step wrote, when the state the run ended with (a final answer of no
  agent holding the key) does not hold part of what the update wrote and the
  failure's reason names a word or a figure of that part (a value it wrote, not a
  key).

The earliest such update is blamed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import STATE_SCHEMA
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "update_not_merged"
MOST_WORDS = 2_000  # words of a lost value compared with the failure's reason
_WORD = re.compile(r"[A-Za-z][\w'-]{2,}|\d[\d,.]*\d|\d")
_TRIVIAL = frozenset({"the", "and", "for", "with", "true", "false", "none", "null"})


def rule_update_not_merged(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's update that its state dropped (a key it does not have) or merged
    away (a reducer that kept the old value)."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    schema = run.metadata.get(STATE_SCHEMA)
    if not isinstance(schema, dict) or not isinstance(schema.get("keys"), list):
        return
    keys = {str(k) for k in schema["keys"]}
    reducers = schema.get("reducers")
    if not isinstance(reducers, dict):
        reducers = {}
    reason = run.outcome.reason or ""
    named = _words(reason)
    events = run.events
    runs = NodeRuns(events)
    final = next(
        (
            e.output
            for e in reversed(events)
            if e.type is EventType.FINAL_ANSWER and not e.agent_name and isinstance(e.output, dict)
        ),
        None,
    )
    for i, e in enumerate(events):
        if (
            e.type is not EventType.AGENT_END
            or not e.agent_name
            or "/" in e.agent_name
            or e.agent_name in runs.outer
            or not isinstance(e.output, dict)
            or not runs.started(e, i)
        ):
            continue
        for key, value in e.output.items():
            key = str(key)
            if key not in keys:
                near = _near(key, keys)
                if near or key.lower() in named:
                    yield _dropped(e, key, near)
                    return
                continue
            reducer = reducers.get(key)
            if not reducer or reducer == "add_messages" or final is None or key not in final:
                continue
            if _written_after(events, i, key):
                continue
            lost = _lost(value, final[key])
            if lost is not None and named & _words(" ".join(_texts(lost))):
                yield _merged_away(e, key, str(reducer), lost, final[key])
                return


def _words(text: str) -> set[str]:
    """A text's words (three letters or more, not the commonest) and figures, lowered."""
    found = set()
    for m in _WORD.finditer(text):
        word = m.group().lower().replace(",", "")
        if word not in _TRIVIAL:
            found.add(word)
        if len(found) >= MOST_WORDS:
            break
    return found


def _texts(value: Any, depth: int = 0) -> Iterator[str]:
    """The texts and numbers a value holds (not its keys)."""
    if isinstance(value, dict):
        if depth < 6:
            for v in value.values():
                yield from _texts(v, depth + 1)
    elif isinstance(value, list | tuple):
        if depth < 6:
            for v in value:
                yield from _texts(v, depth + 1)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield str(value)


def _near(key: str, keys: set[str]) -> str | None:
    """The state's key that ``key`` misses by a letter or two, or by case."""
    lowered = {k.lower().replace("_", ""): k for k in keys}
    same = lowered.get(key.lower().replace("_", ""))
    if same is not None:
        return same
    close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.8)
    return close[0] if close else None


def _written_after(events: list[AgentEvent], at: int, key: str) -> bool:
    return any(
        e.type is EventType.AGENT_END and isinstance(e.output, dict) and key in e.output
        for e in events[at + 1 :]
    )


def _lost(written: Any, held: Any) -> Any:
    """The part of ``written`` that ``held`` does not hold (None when it holds all of
    it): a mapping's entries, a list's items, or the value itself."""
    if isinstance(written, dict):
        if not isinstance(held, dict):
            return written
        lost = {k: v for k, v in written.items() if k not in held or held[k] != v}
        return lost or None
    if isinstance(written, list):
        if not isinstance(held, list):
            return written
        missing = [v for v in written if v not in held]
        return missing or None
    return None if written == held else written


def _dropped(event: AgentEvent, key: str, near: str | None) -> Finding:
    agent, step = event.agent_name, event.step_index
    which = f" (the state's key is {near!r})" if near else ""
    fix = (
        f"At step {step}, {agent}: return the update under {near!r}, the state's key, not {key!r}."
        if near
        else f"At step {step}, {agent}: add {key!r} to the graph's state (its schema), or "
        "return the update under the key the next steps read."
    )
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{agent}'s update at step {step} wrote {key!r}, which is not a key of the run's "
        f"state{which}: the framework dropped it without an error, and the steps after "
        "it never had it",
        confidence=0.6,
        evidence=[quoted(event, "output", key)],
        metadata={"fix": fix, "key": key},
    )


def _merged_away(event: AgentEvent, key: str, reducer: str, lost: Any, held: Any) -> Finding:
    agent, step = event.agent_name, event.step_index
    wrote = shorten(compact_json(lost), 120)
    fix = (
        f"At step {step}, {agent}: its update of {key!r} ({wrote}) did not reach the state; "
        f"check the reducer of {key!r}, {reducer}: it keeps the state's old value over the update."
    )
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{agent}'s update at step {step} wrote {key!r}: {wrote}, but the state the run "
        f"ended with holds {key!r}: {shorten(compact_json(held), 120)}, and no step after "
        f"it wrote {key!r}: the key's reducer, {reducer}, merged the update away",
        confidence=0.6,
        evidence=[quoted(event, "output", key)],
        metadata={"fix": fix, "key": key},
    )
