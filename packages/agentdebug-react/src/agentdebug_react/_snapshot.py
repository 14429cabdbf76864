"""Checkpoints: the loop's state before every step, kept on the trajectory itself.

A rerun must be able to start from a stored run alone (given the step function),
so the state before each step travels in the trajectory: a CHECKPOINT event per
step whose ``metadata['react_checkpoint']`` holds the message list and the
user's state. Both are stored as a delta against the previous checkpoint, so a
long run with big observations, or a state that grows (every page read), costs its
size once, not once per step: the messages that were appended (ReAct loops only
ever append; a loop that rewrites its history gets a full copy), and of a state
that is a JSON object, the keys that changed, with a list value that grew given
as what was appended (``state_delta``); of a list state, what was appended
(``state_append``); any other state whole (``state``), as is the first. What
changed is found in the JSON form, one encoding per key a step, so a step's
checkpoint costs time in the size of the state, and space in what changed.

The user's own state goes through a :class:`Snapshotter`: two functions that turn
the state into JSON data and back. The default keeps JSON-able state as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import orjson
from agentdebug.errors import AgentDebugError
from agentdebug.rerun.branch import checkpoint_before
from agentdebug.schema import AgentEvent, AgentTrajectory

from agentdebug_react._step import FRAMEWORK, Message

#: The key, in a CHECKPOINT event's metadata, that holds the snapshot.
CHECKPOINT_KEY = "react_checkpoint"
#: Bumped when the stored shape changes; a reader refuses shapes it does not know.
CHECKPOINT_FORMAT = 2
#: The formats a reader reads: 1 stored the state whole at every step.
READ_FORMATS = frozenset({1, 2})

S = TypeVar("S")


@runtime_checkable
class Snapshotter(Protocol[S]):
    """Turns the user's state into JSON data and back, for checkpoints.

    ``snapshot`` is called before every step and must not change the state;
    ``restore`` is called once per rerun and must return a fresh, independent
    state (the rerun mutates it).
    """

    def snapshot(self, state: S) -> Any: ...

    def restore(self, data: Any) -> S: ...


class JsonSnapshotter:
    """The default: state that is already JSON data (dicts, lists, strings, numbers,
    None) is stored as it is and restored as a copy. Anything else makes the
    checkpoint unrestorable (logged at capture, a clear error at rerun); give the
    loop a snapshotter of your own for such state."""

    name = "json"

    def snapshot(self, state: Any) -> Any:
        if not _plain(state):
            _check_plain(state, "state")  # (says where)
        return state

    def restore(self, data: Any) -> Any:
        return data


_PLAIN = (str, int, float, bool, type(None))


_LEAVES = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON data: :func:`_check_plain`'s test, without the
    path it names. A loop over a stack, not a call a value with the path built for
    each: this runs on the whole state before every step, and the walk that names
    the path cost a growing state's capture the square of its steps (3.8 of 5.1 s of
    a 1,500-step run)."""
    stack = [value]
    pop, more = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind in _LEAVES:
            continue
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            more(item.values())
        elif kind is list:
            more(item)
        elif kind is not float or not math.isfinite(item):
            return False  # (a subclass of a plain type: the walk decides)
    return True


def _check_plain(value: Any, where: str) -> None:
    """Refuse what JSON would store but not give back (a dataclass comes back as a
    dict, a tuple as a list): the rerun would get a state of another type."""
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError(f"{where} is {value}, which JSON stores as null")
    if isinstance(value, _PLAIN):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a {type(key).__name__} key; JSON keys are strings")
            _check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
        return
    raise TypeError(
        f"{where} is a {type(value).__name__}, not plain JSON data (dict, list, str, "
        "number, bool, None)"
    )


def snapshotter_name(snapshotter: object) -> str:
    name = getattr(snapshotter, "name", None)
    return name if isinstance(name, str) else type(snapshotter).__qualname__


def _default(value: Any) -> Any:
    """orjson's fallback: pydantic models and the usual containers, nothing guessed."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS)


def copy_json(value: Any) -> Any:
    """A deep, independent copy of JSON data (through its JSON form)."""
    return orjson.loads(dumps(value))


def appended(before: bytes, now: bytes) -> list[Any] | None:
    """What was appended to the list whose JSON was ``before`` to make the one whose
    JSON is ``now`` (the same items first, then more); None if that is not how it
    changed. Read from the bytes: ``before`` without its closing bracket, then a
    comma at the top level (every item before it closed), is a list grown at its end."""
    if before[:1] != b"[" or before[-1:] != b"]" or now[:1] != b"[":
        return None
    if before == b"[]":
        return orjson.loads(now)  # type: ignore[no-any-return]
    cut = len(before) - 1
    if len(now) > len(before) and now[cut : cut + 1] == b"," and now.startswith(before[:cut]):
        return orjson.loads(b"[" + now[cut + 1 :])  # type: ignore[no-any-return]
    return None


class Checkpointer:
    """Takes the checkpoints of one run; remembers the JSON of the last messages and
    state it stored, so that the next checkpoint stores only what changed."""

    def __init__(self, snapshotter: Snapshotter[Any]) -> None:
        self.snapshotter = snapshotter
        self.name = snapshotter_name(snapshotter)
        self._previous: tuple[bytes, int] | None = None  # the messages' JSON, their count
        # the state's JSON: per key for an object, whole for anything else
        self._state: dict[str, bytes] | bytes | None = None

    def take(self, step: int, messages: list[Message], state: Any) -> dict[str, Any]:
        """The checkpoint data for the state before ``step``. Never raises: what
        cannot be stored is named in ``problem`` and the checkpoint is marked
        unrestorable."""
        data: dict[str, Any] = {"format": CHECKPOINT_FORMAT, "step": step, "snapshotter": self.name}
        problems: list[str] = []
        try:
            encoded = dumps(messages)  # (one call: each message again would cost more)
        except Exception as exc:
            problems.append(f"the messages are not JSON data ({exc})")
            self._previous = None  # the chain is broken: the next checkpoint stores all
        else:
            previous = self._previous
            added = None
            if previous is not None:
                added = [] if encoded == previous[0] else appended(previous[0], encoded)
            if previous is None or added is None:
                data["messages_keep"] = 0
                data["messages_append"] = orjson.loads(encoded)
            else:
                data["messages_keep"] = previous[1]
                data["messages_append"] = added
            data["n_messages"] = len(messages)
            self._previous = (encoded, len(messages))
        try:
            data.update(self._state_data(self.snapshotter.snapshot(state)))
        except Exception as exc:
            self._state = None  # the chain is broken: the next checkpoint stores it whole
            problems.append(
                f"the state could not be snapshotted by the '{self.name}' snapshotter "
                f"({type(exc).__name__}: {exc}); give the loop a Snapshotter for it"
            )
        data["restorable"] = not problems
        if problems:
            data["problem"] = "; ".join(problems)
        return data

    def _state_data(self, value: Any) -> dict[str, Any]:
        """The state as stored: what changed since the previous checkpoint, or whole."""
        before = self._state
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            parts = {k: dumps(v) for k, v in value.items()}
            self._state = parts
            if not isinstance(before, dict):
                return {"state": {k: orjson.loads(v) for k, v in parts.items()}}
            changed: dict[str, Any] = {}
            grown: dict[str, Any] = {}
            for key, now in parts.items():
                was = before.get(key)
                if was == now:
                    continue
                added = appended(was, now) if was is not None else None
                if added is None:
                    changed[key] = orjson.loads(now)
                else:
                    grown[key] = added
            delta: dict[str, Any] = {}
            if changed:
                delta["set"] = changed
            if grown:
                delta["extend"] = grown
            gone = [k for k in before if k not in parts]
            if gone:
                delta["drop"] = gone
            return {"state_delta": delta}
        whole = dumps(value)
        self._state = whole
        if isinstance(before, bytes) and isinstance(value, list):
            added = [] if whole == before else appended(before, whole)
            if added is not None:
                return {"state_append": added}
        return {"state": orjson.loads(whole)}


@dataclass(frozen=True)
class RestorePoint:
    """The state to restore for a rerun: the checkpoint event and what it holds."""

    step: int
    event: AgentEvent
    messages: list[Message]
    state_data: Any
    snapshotter: str | None


def react_checkpoints(trajectory: AgentTrajectory) -> list[AgentEvent]:
    return [
        e
        for e in trajectory.events
        if e.checkpoint is not None and e.checkpoint.framework == FRAMEWORK
    ]


def _data(event: AgentEvent, run_id: str) -> dict[str, Any]:
    data = event.metadata.get(CHECKPOINT_KEY)
    if not isinstance(data, dict):
        raise AgentDebugError(
            f"run '{run_id}': the checkpoint at step {event.step_index} (event {event.id}) "
            "holds no snapshot (was it truncated by AGENTDEBUG_MAX_EVENT_BYTES?)"
        )
    if data.get("format") not in READ_FORMATS:
        raise AgentDebugError(
            f"run '{run_id}': the checkpoint at step {event.step_index} has format "
            f"{data.get('format')!r}; this agentdebug-react reads formats "
            f"{', '.join(map(str, sorted(READ_FORMATS)))}"
        )
    return data


def restore_point(trajectory: AgentTrajectory, resume_step: int) -> RestorePoint:
    """The checkpoint to restore to redo ``resume_step``, with its messages rebuilt.

    That is the checkpoint taken at the start of the step (the one
    :func:`agentdebug.rerun.branch.checkpoint_before` names). A step before the
    first checkpoint (the user's question, step 0) resumes at the first loop step,
    since nothing the agent decided comes before it. Raises AgentDebugError saying
    what is missing when the run cannot be restored.
    """
    checkpoints = react_checkpoints(trajectory)
    if not checkpoints:
        raise AgentDebugError(
            f"run '{trajectory.id}' has no ReAct checkpoints to restore (it was not captured "
            "by agentdebug-react's ReactLoop, or was imported from a transcript)"
        )
    found = checkpoint_before(trajectory, resume_step)
    if found is None or found.checkpoint is None or found.checkpoint.framework != FRAMEWORK:
        earlier = [e for e in checkpoints if e.step_index <= resume_step]
        found = earlier[-1] if earlier else checkpoints[0]
    messages: list[Any] | None = None
    broken_at: int | None = None
    state = _NONE  # the state as of the checkpoint, rebuilt along the chain
    for event in checkpoints:
        data = _data(event, trajectory.id)
        state = _next_state(state, data)
        keep, append = data.get("messages_keep"), data.get("messages_append")
        linked = isinstance(keep, int) and (
            keep == 0 or (messages is not None and 0 < keep <= len(messages))
        )
        if linked and isinstance(append, list):
            messages = (messages or [])[:keep] + append  # keep 0: a full copy
            broken_at = None
        else:
            if messages is not None or broken_at is None:
                broken_at = event.step_index
            messages = None
        if event is found:
            break
    data = _data(found, trajectory.id)
    if not data.get("restorable", False):
        raise AgentDebugError(
            f"run '{trajectory.id}': the state before step {found.step_index} was not "
            f"restorable when it was captured: {data.get('problem', 'no reason recorded')}"
        )
    if messages is None:
        raise AgentDebugError(
            f"run '{trajectory.id}': the message history before step {found.step_index} "
            f"cannot be rebuilt (the checkpoint at step {broken_at} is incomplete)"
        )
    if state is _NONE:
        raise AgentDebugError(
            f"run '{trajectory.id}': the state before step {found.step_index} cannot be "
            "rebuilt (a checkpoint before it stored what changed since one that is missing)"
        )
    snap = data.get("snapshotter")
    return RestorePoint(
        step=found.step_index,
        event=found,
        messages=copy_json(messages),
        state_data=copy_json(state),
        snapshotter=snap if isinstance(snap, str) else None,
    )


_NONE: Any = object()  # no state known (before the first checkpoint, or a broken chain)


def _next_state(state: Any, data: dict[str, Any]) -> Any:
    """The state a checkpoint holds, given the one before it: new containers only,
    so the trajectory's own data is never changed."""
    if "state" in data:
        return data["state"]
    delta, grown = data.get("state_delta"), data.get("state_append")
    if isinstance(delta, dict) and isinstance(state, dict):
        state = {**state, **(delta.get("set") or {})}
        for key, items in (delta.get("extend") or {}).items():
            was = state.get(key)
            if not isinstance(was, list) or not isinstance(items, list):
                return _NONE
            state[key] = was + items
        for key in delta.get("drop") or ():
            state.pop(key, None)
        return state
    if isinstance(grown, list) and isinstance(state, list):
        return state + grown
    return _NONE
