"""A rerun branch given the answers the original run's human gave at its interrupts.

A branch forked before an ``interrupt()`` stops there, as the original did, and a
branch stopped there cannot be judged. The original's resumes are in its
trajectory (``USER_INPUT`` events, ``langgraph_event: "resume"``, after the
``CHECKPOINT`` events of the interrupts they answered), so the executor can resume
the branch with the same answer, in order, and go on to the end.

Whether an answer fits the branch's interrupt is the ``replay_answers`` policy:

- ``"same-question"`` (the default): the branch waits at interrupts raised by the
  same nodes, asking the same (the interrupts' values are equal). An approval is
  a gate the human opened for what they were shown; the branch is given it only
  for the same thing.
- ``"same-node"``: the same nodes suffice. The question may differ (it often
  quotes what the corrected step decided); the resume's event says so
  (``question_matches``) and gives the original's question. For graphs whose
  approvals a debugging branch may pass on the human's behalf (sandboxed tools).
- ``"never"``: the branch ends at its first interrupt, as without replay.

An answer is replayed only when it is the answer as given: stored whole
(``replayable``: a plain JSON value, a command with nothing else, not cut to the
event size limit), and with no edit of the state (``update_state``) between the
stop and the resume, seen as the resumed step starting from another checkpoint
than the one the run stopped at. A resume map keyed by the original's interrupt
ids is re-keyed to the branch's interrupts of the same node and question (then of
the same node); questions are compared as a set, since parallel tasks raise
theirs in any order. ``invoke(None)`` is replayed as it was given: past a static
stop, or at an ``interrupt()`` (the node asks again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson
from agentdebug import EventType
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory
from agentdebug.text import shorten
from langgraph.types import Command

from agentdebug_langgraph._convert import compact, to_json

REPLAY_POLICIES = ("same-question", "same-node", "never")
# how "the branch stopped at an interrupt" goes on, for branch_paused
ANSWERED = ", which the original run's human answered when it was resumed"
NEVER_REACHED = ", which the original run never reached, so no answer was replayed"
_START = EventType.AGENT_START
_NON_STR = orjson.OPT_NON_STR_KEYS


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
    static interrupt, ``interrupt_before``/``interrupt_after``). ``why_not``: why
    it cannot be given to a branch as it was given (``None`` when it can)."""

    asked: tuple[Asked, ...]
    kind: str  # "command" (Command(resume=...)) or "none" (invoke(None))
    value: Any
    event_id: str
    why_not: str | None = None
    stop: Stop | None = None  # at a static interrupt: what the human was shown


@dataclass(frozen=True)
class Stop:
    """A static interrupt (``interrupt_before``/``interrupt_after``): the nodes
    about to run (None: not recorded) and the tool calls the conversation's last
    message asks for, which is what a human approves there (``interrupt_before``
    a tools node: the usual approval gate), as ``{"name", "args"}``."""

    next: tuple[str, ...] | None
    calls: tuple[Any, ...]


def check_policy(policy: str) -> str:
    if policy not in REPLAY_POLICIES:
        raise AgentDebugError(
            f"LangGraphRerunExecutor(replay_answers={policy!r}): expected one of "
            + ", ".join(repr(p) for p in REPLAY_POLICIES)
        )
    return policy


def recorded_answers(run: AgentTrajectory, from_step: int) -> list[Answer]:
    """The resumes of ``run`` that a branch forked before step ``from_step`` meets,
    with the interrupts each answered: those from the first node start of that
    step on (a stop recorded before it, as ``interrupt_before`` the blamed node,
    is where the fork already is: the branch does not stop there again)."""
    events = run.events
    start = next(
        (i for i, e in enumerate(events) if e.type is _START and e.step_index >= from_step),
        len(events),
    )
    answers: list[Answer] = []
    asked: list[Asked] = []
    stop: Stop | None = None
    calls: tuple[Any, ...] = ()  # asked for by the latest model answer, not yet run
    at: str | None = None  # the checkpoint the run waited at
    after: tuple[int, str | None] | None = None  # a resume (its index), where it waited
    for event in events[start:]:
        md = event.metadata
        said = md.get("langgraph_event")
        root_start = event.type is _START and "namespace" not in md
        if root_start and event.checkpoint is not None:
            if after is not None:  # the first step after a resume: did it start there?
                index, waited = after
                if waited is not None and waited != event.checkpoint.checkpoint_id:
                    answers[index] = replace(answers[index], why_not=EDITED)
                after = None
            at = event.checkpoint.checkpoint_id
        elif event.type is EventType.LLM_RESPONSE:
            # (a model answer with none, a summary for the approver, leaves them pending)
            calls = shown_calls(event.output) or calls
        elif event.type is EventType.TOOL_CALL:
            calls = ()  # (a tool ran: what the model asked is under way)
        elif event.type is EventType.CHECKPOINT and said == "interrupt":
            at = md.get("checkpoint_id") or at  # (a static stop names its checkpoint)
            if "breakpoint" in md:  # a static stop: no interrupt() values
                nodes = md.get("next")
                stop = Stop(tuple(map(str, nodes)) if isinstance(nodes, list) else None, calls)
            values = event.output if isinstance(event.output, list) else []
            ids = md.get("interrupt_ids")
            ids = ids if isinstance(ids, list) else []
            node = md.get("root_node")  # (older records have none: they are not replayed)
            for k, value in enumerate(values):
                asked.append(Asked(node, value, ids[k] if k < len(ids) else None))
        elif event.type is EventType.USER_INPUT and said == "resume":
            answers.append(
                Answer(
                    asked=tuple(asked),
                    kind=str(md.get("resumed_with") or "command"),
                    value=event.input,
                    event_id=event.id,
                    why_not=_why_not(md),
                    stop=stop,
                )
            )
            after = (len(answers) - 1, at)
            asked, stop = [], None
    return answers


def shown_calls(message: Any) -> tuple[Any, ...]:
    """The tool calls a message (as recorded) asks for, as ``{"name", "args"}``."""
    found = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(found, list):
        return ()
    return tuple(
        {"name": c.get("name"), "args": c.get("args")} for c in found if isinstance(c, dict)
    )


def stop_of(snapshot: Any) -> Stop:
    """What a thread stopped at a static interrupt shows: the nodes it will run,
    and the tool calls its conversations (the state's lists of messages: a graph
    may keep several) ask for and no tool message has answered yet: those of each
    one's last message with tool calls (a message after it that asks for none, a
    summary for the approver, leaves them pending), as the original's are read
    from its record."""
    values = getattr(snapshot, "values", None)
    calls: list[Any] = []
    for conversation in values.values() if isinstance(values, dict) else ():
        if not isinstance(conversation, list):
            continue
        answered: set[Any] = set()
        for message in reversed(conversation):
            asked = getattr(message, "tool_calls", None)
            if asked and isinstance(asked, list):
                calls += [c for c in asked if isinstance(c, dict) and c.get("id") not in answered]
                break
            if getattr(message, "type", None) == "tool":
                answered.add(getattr(message, "tool_call_id", None))
    pending = shown_calls({"tool_calls": as_recorded(calls)}) if calls else ()
    return Stop(tuple(map(str, getattr(snapshot, "next", ()) or ())), pending)


OLD_RECORD = (
    f"{ANSWERED}, but the run was recorded before agentdebug kept how answers were "
    "given, so its answer cannot be replayed as given (record the run again to rerun "
    "it through the interrupt)"
)
EDITED = (
    ", where the original's human also changed the state (update_state) before going "
    "on, which a branch cannot be given"
)


def _why_not(md: dict[str, Any]) -> str | None:
    """Why a recorded resume is not the answer as given, if it is not."""
    if any(key.endswith("_truncated_bytes") for key in md):
        return ", where the original's answer was too large to store whole"
    replayable = md.get("replayable")
    if replayable is None:  # an earlier version's record: an object, a command's
        return OLD_RECORD  # update or goto, a map's interrupt ids were not kept
    if replayable is not True:
        return (
            ", where the original's human answered with more than a plain JSON value "
            "(a Command with update or goto, or an object), which cannot be replayed as given"
        )
    return None


def as_recorded(value: Any) -> Any:
    """A value as the trajectory stores it (made small, through JSON)."""
    try:  # (non-string keys as the store has them: as text)
        return orjson.loads(orjson.dumps(compact(value), default=to_json, option=_NON_STR))
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


def replay_for(
    answer: Answer | None,
    pending: Sequence[tuple[str, Any]],
    policy: str,
    given: int = 0,
    stop: Stop | None = None,
) -> Replay:
    """How to give the branch, waiting at ``pending`` (empty at a static
    interrupt, where ``stop`` is what it shows), the original's next ``answer``
    (None: none left, of the ``given`` the branch has had); ``refused`` completes
    "the branch stopped at an interrupt"."""
    if answer is None and given:
        times = "once" if given == 1 else f"{given} times"
        return Replay(
            refused=f", one more than the original run's human answered after the fork "
            f"({times}, each answer replayed), so none was left to give"
        )
    if answer is None:
        return Replay(refused=NEVER_REACHED)
    if policy == "never":
        return Replay(refused=ANSWERED + " (replay_answers='never')")
    if answer.why_not is not None:
        return Replay(refused=answer.why_not)
    note: dict[str, Any] = {"replayed_from": answer.event_id}
    theirs = [a.node or "" for a in answer.asked]
    ours = [node for node, _ in pending]
    if not theirs and pending:  # the original went past a static stop here
        return Replay(
            refused=f" (interrupt() in {_nodes(ours)}), where the original only stopped "
            "before or after a node (interrupt_before/after) and went on"
        )
    if theirs and not pending:
        return Replay(
            refused=" before or after a node (interrupt_before/after), where the original "
            f"waited at interrupt() in {_nodes(theirs)}"
        )
    if sorted(theirs) != sorted(ours):
        return Replay(
            refused=f" in {_nodes(ours)}, where the original's human answered an "
            f"interrupt in {_nodes(theirs)}"
        )
    if not theirs:  # both stopped before or after a node
        return _past_stop(answer, stop, policy, note)
    asked_now = [as_recorded(getattr(i, "value", None)) for _, i in pending]
    asked_then = [a.value for a in answer.asked]
    same = sorted(map(_key, asked_now)) == sorted(map(_key, asked_then))  # (in any order)
    if not same and policy == "same-question":
        return Replay(
            refused=f" asking {asked_now!r}, where the original asked {asked_then!r} "
            "(replay_answers='same-question')"
        )
    if theirs:
        note["question_matches"] = same
        if not same:
            note["original_question"] = asked_then
    if answer.kind == "none":  # invoke(None): past a static stop, or a node asked again
        return Replay(resume=None, note=note)
    return Replay(resume=Command(resume=_mapped(answer, pending)), note=note)


def _past_stop(answer: Answer, stop: Stop | None, policy: str, note: dict[str, Any]) -> Replay:
    """The original's going on past a static stop, for a branch stopped at one: at
    the same nodes, and (``same-question``) with the same tool calls pending, for
    an approval before a tools node is of the calls the human was shown (before,
    any calls were run on the human's behalf)."""
    then, now = answer.stop, stop
    if then is not None and now is not None:
        if then.next is not None and sorted(then.next) != sorted(now.next or ()):
            return Replay(
                refused=f" before {_nodes(now.next or ())}, where the original's human went "
                f"on past a stop before {_nodes(then.next)}"
            )
        same = sorted(map(_key, then.calls)) == sorted(map(_key, now.calls))
        if not same and policy == "same-question":
            return Replay(
                refused=f" with the tool calls {_calls(now.calls)} pending, where the "
                f"original's human let {_calls(then.calls)} run "
                "(replay_answers='same-question')"
            )
        if not same:
            note["question_matches"] = False
            note["original_question"] = list(then.calls)
    elif policy == "same-question" and (then is None) != (now is None):
        return Replay(refused=OLD_RECORD)
    if answer.kind == "none":
        return Replay(resume=None, note=note)
    return Replay(resume=Command(resume=answer.value), note=note)


def _calls(calls: Sequence[Any]) -> str:
    if not calls:
        return "none"
    return "; ".join(f"{c.get('name')}({shorten(_json(c.get('args')), 120)})" for c in calls)


def _json(value: Any) -> str:
    return orjson.dumps(value, default=to_json, option=_NON_STR).decode()


def _key(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except Exception:
        return repr(value).encode()


def _mapped(answer: Answer, pending: Sequence[tuple[str, Any]]) -> Any:
    """The answer; a resume map keyed by the original's interrupt ids is keyed by
    the branch's instead: each original interrupt goes to the branch's with the
    same node and question, those left to the branch's of the same node (parallel
    tasks raise theirs in any order)."""
    value = answer.value
    ids = {a.interrupt_id for a in answer.asked if a.interrupt_id}
    if not isinstance(value, dict) or not value or not set(value) <= ids:
        return value
    free = [
        (node, getattr(found, "id", None), _key(as_recorded(getattr(found, "value", None))))
        for node, found in pending
    ]
    wanted = [a for a in answer.asked if a.interrupt_id in value]
    mapped: dict[Any, Any] = {}
    for exact in (True, False):  # the same questions first, then by node
        for asked in list(wanted):
            pick = next(
                (
                    f
                    for f in free
                    if f[0] == asked.node and (not exact or f[2] == _key(asked.value))
                ),
                None,
            )
            if pick is not None and pick[1] is not None:
                free.remove(pick)
                wanted.remove(asked)
                mapped[pick[1]] = value[asked.interrupt_id]
    return mapped if not wanted else value


def _nodes(names: Sequence[str]) -> str:
    return ", ".join(sorted({repr(n) for n in names})) or "no node"


def replay_note(run: AgentTrajectory, from_step: int, policy: str) -> str | None:
    """What a person approving a rerun from ``from_step`` should know of the
    answers the branch will be given on the human's behalf (None: none)."""
    if policy == "never":
        return None
    given = [a for a in recorded_answers(run, from_step) if a.why_not is None]
    if not given:
        return None
    said = "; ".join(
        _went_on(a)
        if a.kind == "none"
        else orjson.dumps(a.value, default=to_json, option=_NON_STR).decode()[:120]
        for a in given
    )
    where = (
        "the same nodes ask the same (at a stop before or after a node: the same tool calls wait)"
        if policy == "same-question"
        else "the same nodes ask"
    )
    n = len(given)
    answers = "the answer" if n == 1 else f"the {n} answers"
    return (
        f"where the branch stops at an interrupt that {where} as in the original run, it "
        f"is given {answers} a person gave then, on their behalf: {said} "
        f"(replay_answers={policy!r}; replay_answers=never stops it there instead)"
    )


def _went_on(answer: Answer) -> str:
    """An ``invoke(None)`` the original's human gave, as the gate shows it."""
    stop = answer.stop
    if stop is None:
        return "go on (invoke(None))"
    where = f" past the stop before {_nodes(stop.next)}" if stop.next else ""
    calls = f", running {_calls(stop.calls)}" if stop.calls else ""
    return f"go on (invoke(None)){where}{calls}"
