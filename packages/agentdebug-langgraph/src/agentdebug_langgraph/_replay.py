"""A rerun branch given the answers the original run's human gave at its interrupts.

A branch forked before an ``interrupt()`` stops there, as the original did, and a
branch stopped there cannot be judged. The original's resumes are in its
trajectory (``USER_INPUT`` events, ``langgraph_event: "resume"``, after the
``CHECKPOINT`` events of the interrupts they answered), so the executor can resume
the branch with the same answer, in order, and go on to the end.

Whether an answer fits the branch's interrupt is the ``replay_answers`` policy:

- ``"same-node"`` (the default): the branch waits at interrupts raised by the same
  nodes as the original's at that point. The question may differ (it often quotes
  what the corrected step decided); the resume's event says so
  (``question_matches``), and gives the original's question.
- ``"same-question"``: the interrupts' values must be the same as well.
- ``"never"``: the branch ends at its first interrupt, as without replay.

An answer is replayed only when it was stored as given (``replayable``: a plain
JSON value, a command with nothing else); a resume map keyed by the original's
interrupt ids is given to the branch's interrupts in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from agentdebug import EventType
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory
from langgraph.types import Command

from agentdebug_langgraph._convert import compact, to_json

REPLAY_POLICIES = ("same-node", "same-question", "never")
_NODE_EVENTS = (EventType.AGENT_START, EventType.AGENT_END)


@dataclass(frozen=True)
class Asked:
    """One interrupt of the original run: the root-level node that raised it (a
    subgraph's interrupt is its outer node's), its value, its id."""

    node: str | None
    value: Any
    interrupt_id: str | None


@dataclass(frozen=True)
class Answer:
    """One resume of the original run, and the interrupts it answered (none for a
    static interrupt, ``interrupt_before``/``interrupt_after``)."""

    asked: tuple[Asked, ...]
    kind: str  # "command" (Command(resume=...)) or "none" (invoke(None))
    value: Any
    replayable: bool
    event_id: str


def check_policy(policy: str) -> str:
    if policy not in REPLAY_POLICIES:
        raise AgentDebugError(
            f"LangGraphRerunExecutor(replay_answers={policy!r}): expected one of "
            + ", ".join(repr(p) for p in REPLAY_POLICIES)
        )
    return policy


def recorded_answers(run: AgentTrajectory, from_step: int) -> list[Answer]:
    """The resumes of ``run`` that a branch resumed before step ``from_step`` meets:
    those after the last node event of an earlier step (the fork's checkpoint is
    the state after it), with the interrupts each answered."""
    events = run.events
    start = 0
    for i, event in enumerate(events):
        if event.type in _NODE_EVENTS and event.step_index < from_step:
            start = i + 1
    answers: list[Answer] = []
    asked: list[Asked] = []
    for event in events[start:]:
        md = event.metadata
        said = md.get("langgraph_event")
        if event.type is EventType.CHECKPOINT and said == "interrupt":
            values = event.output if isinstance(event.output, list) else []
            ids = md.get("interrupt_ids")
            ids = ids if isinstance(ids, list) else []
            node = (event.agent_name or "").split("/")[0] or None
            for k, value in enumerate(values):
                asked.append(Asked(node, value, ids[k] if k < len(ids) else None))
        elif event.type is EventType.USER_INPUT and said == "resume":
            answers.append(
                Answer(
                    asked=tuple(asked),
                    kind=str(md.get("resumed_with") or "command"),
                    value=event.input,
                    replayable=md.get("replayable") is True,
                    event_id=event.id,
                )
            )
            asked = []
    return answers


def as_recorded(value: Any) -> Any:
    """A value as the trajectory stores it (made small, through JSON)."""
    try:
        return orjson.loads(orjson.dumps(compact(value), default=to_json))
    except Exception:  # no JSON form: compared by its text
        return repr(value)


def waiting(snapshot: Any) -> list[tuple[str, Any]]:
    """The interrupts a thread waits at: (the task's node, the ``Interrupt``)."""
    return [
        (str(task.name), found)
        for task in getattr(snapshot, "tasks", ()) or ()
        for found in getattr(task, "interrupts", ()) or ()
    ]


@dataclass(frozen=True)
class Replay:
    """What to resume a branch with, and the note its resume event carries; or
    why not (``refused``)."""

    resume: Any = None
    note: dict[str, Any] | None = None
    refused: str | None = None


def replay_for(answer: Answer | None, pending: Sequence[tuple[str, Any]], policy: str) -> Replay:
    """How to give the branch, waiting at ``pending`` (empty at a static
    interrupt), the original's next ``answer``."""
    if policy == "never":
        return Replay(refused="")
    if answer is None:
        return Replay(refused=", which the original run never reached, so no answer was replayed")
    if not answer.replayable:
        return Replay(
            refused=", where the original's human answered with more than a plain JSON "
            "value (a Command with update or goto, or an object), which cannot be "
            "replayed as given"
        )
    note: dict[str, Any] = {"replayed_from": answer.event_id}
    if answer.kind == "none":
        if pending:
            return Replay(
                refused=f", at interrupt() in {_nodes(pending)}, where the original "
                "only stopped before a node (interrupt_before/after) and went on"
            )
        return Replay(resume=None, note=note)
    if not pending:
        return Replay(
            refused=" before a node (interrupt_before/after), where the original waited "
            f"at interrupt() in {_nodes([(a.node or '?', None) for a in answer.asked])}"
        )
    theirs = [a.node for a in answer.asked]
    ours = [node for node, _ in pending]
    if sorted(n or "" for n in theirs) != sorted(ours):
        return Replay(
            refused=f" in {_nodes(pending)}, where the original's human answered an "
            f"interrupt in {', '.join(repr(n) for n in theirs) or 'no node'}"
        )
    same = [as_recorded(getattr(i, "value", None)) for _, i in pending] == [
        a.value for a in answer.asked
    ]
    if not same and policy == "same-question":
        return Replay(
            refused=f" asking {_values(pending)}, where the original asked "
            f"{[a.value for a in answer.asked]!r} (replay_answers='same-question')"
        )
    note["question_matches"] = same
    if not same:
        note["original_question"] = [a.value for a in answer.asked]
    return Replay(resume=Command(resume=_mapped(answer, pending)), note=note)


def _mapped(answer: Answer, pending: Sequence[tuple[str, Any]]) -> Any:
    """The answer; a resume map keyed by the original's interrupt ids is keyed by
    the branch's instead, each original interrupt matched to the branch's with
    the same node and value, else the same node (parallel tasks raise theirs in
    any order)."""
    value = answer.value
    ids = {a.interrupt_id for a in answer.asked if a.interrupt_id}
    if not isinstance(value, dict) or not value or not set(value) <= ids:
        return value
    free = [
        (node, getattr(found, "id", None), as_recorded(getattr(found, "value", None)))
        for node, found in pending
    ]
    mapped: dict[Any, Any] = {}
    for asked in answer.asked:
        if asked.interrupt_id not in value:
            continue
        pick = next((f for f in free if f[0] == asked.node and f[2] == asked.value), None)
        pick = pick or next((f for f in free if f[0] == asked.node), None)
        if pick is None or pick[1] is None:
            return value  # (cannot happen past replay_for's node check)
        free.remove(pick)
        mapped[pick[1]] = value[asked.interrupt_id]
    return mapped


def _nodes(pending: Sequence[tuple[str, Any]]) -> str:
    return ", ".join(sorted({repr(node) for node, _ in pending}))


def _values(pending: Sequence[tuple[str, Any]]) -> str:
    return repr([as_recorded(getattr(i, "value", None)) for _, i in pending])
