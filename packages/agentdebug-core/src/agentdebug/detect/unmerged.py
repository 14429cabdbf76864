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
  steps under it, whose end echoes their state; a ``Command``'s update read inside
  it) with a key that is none of the state's, when the failure's reason names the
  key, or names a word of its value and the key is a near miss of one (``result``
  for ``results``, ``Summary`` for ``summary``, ``query`` for ``queries``); a near
  miss alone is a weak sign (confidence 0.3: a typo'd key nobody reads is harmless,
  and another rule's finding outweighs it);
- an update with a key merged by a reducer of the app's (not ``add_messages``),
  that nothing after it wrote (no later update, and no input: a person's edit, a
  fork, a resume), where the state the run ended with (a final answer of no agent
  holding the key) holds, in place of part of what the update wrote, exactly what
  the key held before it (a reducer that adds, concatenates or merges deeply did
  its work), and the failure's reason names a word or a figure of that part (a
  value it wrote, not a key).

The earliest such update is blamed (a near miss alone, only when nothing else is).
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
_WORD = re.compile(r"[A-Za-z][\w'-]{2,}|\d[\d,.]*\d")
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
    named = _words(run.outcome.reason or "")
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
    # the state as the steps left it: each key's value before the update at hand
    state: dict[str, Any] = {}
    typo: Finding | None = None  # (a near miss the failure does not name: a weak sign)
    for i, e in enumerate(events):
        update = _update(e)
        if e.type is EventType.USER_INPUT:
            if isinstance(e.input, dict):
                state.update((str(k), v) for k, v in e.input.items())
            continue
        if (
            update is None
            or not e.agent_name
            or "/" in e.agent_name
            or e.agent_name in runs.outer
            or not runs.started(e, i)
        ):
            continue
        for key, value in update.items():
            key = str(key)
            before = state.get(key, _NONE)
            state[key] = value
            if key not in keys:
                near = _near(key, keys)
                if key.lower() in named or (near and named & _words(" ".join(_texts(value)))):
                    yield _dropped(e, key, near, 0.6)
                    return
                if near and typo is None:
                    typo = _dropped(e, key, near, 0.3)
                continue
            reducer = reducers.get(key)
            if not reducer or reducer == "add_messages" or final is None or key not in final:
                continue
            if before is _NONE or _changed_after(events, i, key):
                continue
            lost = _kept_old(value, before, final[key])
            if lost is not None and named & _words(" ".join(_texts(lost))):
                yield _merged_away(e, key, str(reducer), lost, final[key])
                return
    if typo is not None:
        yield typo


_NONE = object()


def _update(event: AgentEvent) -> dict[str, Any] | None:
    """A step's update of the state: its end's output, or the update of the
    ``Command`` it returned (recorded as ``{"command": true, "update": ...}``)."""
    if event.type is not EventType.AGENT_END or not isinstance(event.output, dict):
        return None
    out = event.output
    if out.get("command") is True and "update" in out:
        inner = out.get("update")
        return inner if isinstance(inner, dict) else None
    return out


def _changed_after(events: list[AgentEvent], at: int, key: str) -> bool:
    """Whether anything after ``at`` wrote ``key``: a step's update, or the run's own
    input (a person's edit of the state, a fork, a resume: any of them)."""
    for e in events[at + 1 :]:
        if e.type is EventType.USER_INPUT:
            return True
        update = _update(e)
        if update is not None and key in update:
            return True
    return False


def _kept_old(written: Any, before: Any, held: Any) -> Any:
    """The part of ``written`` the state did not take, where it kept what it held
    ``before`` the update (None when it took all of it, or changed otherwise: a
    reducer that adds, concatenates or merges deeply did its work): a mapping's
    entries whose value the state kept as before, a list or a value the state holds
    exactly as before."""
    if isinstance(written, dict) and isinstance(held, dict):
        old = before if isinstance(before, dict) else {}
        lost = {
            k: v
            for k, v in written.items()
            if (k not in held or held[k] != v) and held.get(k, _NONE) == old.get(k, _NONE)
        }
        return lost or None
    if written != held and held == before:
        return written
    return None


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
    lowered = {_plain(k): k for k in keys}
    same = lowered.get(_plain(key))
    if same is not None:
        return same
    close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.8)
    return close[0] if close else None


def _plain(key: str) -> str:
    """A key without case, separators or a plural's ending ("query" and "queries")."""
    word = re.sub(r"[\W_]", "", key.lower())
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _dropped(event: AgentEvent, key: str, near: str | None, confidence: float) -> Finding:
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
        confidence=confidence,
        evidence=[quoted(event, "output", key)],
        metadata={"fix": fix, "key": key},
    )


def _merged_away(event: AgentEvent, key: str, reducer: str, lost: Any, held: Any) -> Finding:
    agent, step = event.agent_name, event.step_index
    wrote = shorten(compact_json(lost), 120)
    fix = (
        f"At step {step}, {agent}: its update of {key!r} ({wrote}) did not reach the state; "
        f"check the reducer of {key!r}, {reducer}: it kept the state's old value over the "
        "update."
    )
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{agent}'s update at step {step} of {key!r} held {wrote}, which the state the run "
        f"ended with does not: it holds {key!r} as before the update, "
        f"{shorten(compact_json(held), 120)}, and nothing after the step wrote {key!r}: "
        f"the key's reducer, {reducer}, kept the old value",
        confidence=0.6,
        evidence=[quoted(event, "output", key)],
        metadata={"fix": fix, "key": key},
    )
