"""A node's update that handed an appending reducer the items the state already held.

An order graph's ``lines`` key is ``Annotated[list, operator.add]``: each update is
appended to the list. ``apply_promos`` returns ``{"lines": state["lines"] +
[promo]}``, the whole list and the promo, so the state holds every line twice; the
pick list ships 24 cases where 12 were ordered, the invoice bills double, and the
confirmation says so faithfully. The run fails far from the update ("the truck
dropped 24 cases ... we ordered 12"), and without this rule the free tier blamed the
invoice or guessed.

The rule keeps to what it can read for certain, in a failed run whose state schema
(``signals.STATE_SCHEMA``, which the LangGraph capture records) names a key merged
by an appending reducer (``operator.add`` and its kin, ``_APPENDING``; not
``add_messages``, which replaces a message by its id): a top-level node's update
(its own, a ``Command``'s, or the state of the subgraph it ran; not ``__start__``,
which passes the input on) that writes under the key a list beginning with every
item, two or more, that the run's input and the updates before it wrote there, in
their order (``state["lines"] + [promo]``), those items records or lists (not
labels or flags, which repeat by nature: a Send worker's "positive"). That node is
blamed (``reflection.flawed_reasoning``: return only the new items to an appending
key). A list an earlier turn on the thread wrote is not in the run, and not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import STATE_SCHEMA
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "update_readded"
_START = "__start__"  # LangGraph's node that writes the input
# reducers that append an update to what the key holds (operator.add's name is "add")
_APPENDING = frozenset({"add", "iadd", "concat", "iconcat", "extend", "append_items"})
MOST_ITEMS = 10_000  # items of a key followed (then the key is not read on)


def rule_update_readded(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's node update that gave an appending key its own items again."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    schema = run.metadata.get(STATE_SCHEMA)
    reducers = schema.get("reducers") if isinstance(schema, dict) else None
    if not isinstance(reducers, dict):
        return
    keys = {
        k
        for k, name in reducers.items()
        if isinstance(k, str) and isinstance(name, str) and name in _APPENDING
    }
    if not keys:
        return
    events = run.events
    held: dict[str, list[str]] = {k: [] for k in keys}  # each key's items, as JSON
    for event in events:
        if event.type is EventType.USER_INPUT:
            written = event.input
        elif (
            event.type is EventType.AGENT_END
            and event.agent_name
            and "/" not in event.agent_name  # (a subgraph's own node: its state's)
            and event.agent_name != _START  # (it passes the input on)
        ):
            written = _update(event.output)  # (a node that ran a subgraph: its state, the update)
        else:
            continue
        if not isinstance(written, dict):
            continue
        for key in keys & written.keys():
            items = written[key]
            if not isinstance(items, list):
                continue
            new = [compact_json(item) for item in items]
            before = held[key]
            if (
                event.type is EventType.AGENT_END
                and len(before) >= 2
                and len(new) >= len(before)
                and new[: len(before)] == before
                and all(isinstance(item, (dict, list)) for item in items[: len(before)])
            ):
                yield _finding(event, key, len(before), len(new))
                return
            if len(before) + len(new) > MOST_ITEMS:
                keys = keys - {key}
                continue
            before.extend(new)


def _update(output: Any) -> Any:
    """A node's update: its output, or a ``Command``'s update (as the capture writes it)."""
    if isinstance(output, dict) and output.get("command") is True:
        return output.get("update")
    return output


def _finding(event: AgentEvent, key: str, had: int, gave: int) -> Finding:
    step = event.step_index
    who = event.agent_name or f"step {step}"
    fix = (
        f"At step {step}, {who}: return only the new items under {key!r}; its reducer "
        f"appends the update to what the state holds, so the {had} it held are now there "
        "twice."
    )
    return rule_finding(
        RULE,
        "reflection.flawed_reasoning",
        event,
        f"{who} at step {step} wrote {gave} items under {key!r}, among them all {had} the "
        f"state held there; {key!r} is merged by appending, so the state holds those "
        "twice after it",
        confidence=0.5,
        evidence=[quoted(event, "output", key)],
        metadata={"fix": fix, "value": key},
    )
