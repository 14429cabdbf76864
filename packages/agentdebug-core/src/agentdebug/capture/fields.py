"""The checks and coercions ``record`` and a run's header apply to fields a
user's agent passes: text fields, the goal, step numbers, artifact and checkpoint
references. A value that is not what the field holds is coerced or kept as a
note, with a warning, never stored as it is (a run holding it could not be read
back) and never raised into the agent."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from agentdebug.capture.encode import clean_text, safe_str
from agentdebug.schema import Artifact, CheckpointRef, EventType, OutcomeStatus

log = logging.getLogger("agentdebug.capture")

GOAL_CHARS = 8000  # a run's goal beyond this is cut (see capped_goal)


def text_or_none(value: Any, name: str) -> str | None:
    """A text field of the run's header, as text UTF-8 can hold (see ``clean_text``)."""
    if value is None or isinstance(value, str):
        return clean_text(value)  # type: ignore[no-any-return]
    log.warning(
        "agentdebug: %s should be a string, got %s; its text is used", name, type(value).__name__
    )
    return clean_text(str(value))  # type: ignore[no-any-return]


def capped_goal(goal: str | None) -> str | None:
    """The goal as the run's header keeps it: its first ``GOAL_CHARS`` characters,
    and how many more there were. An integration takes the goal from the user's
    first message, which may be a whole document: the header is in every listing
    and every diagnosis prompt (the message itself is in the run's events, cut to
    the event size limit)."""
    if goal is None or len(goal) <= GOAL_CHARS:
        return goal
    return f"{goal[:GOAL_CHARS]} ... [goal cut: {len(goal) - GOAL_CHARS:,} more characters]"


MAX_STEP = 2**53  # the largest step index (JSON readers keep integers exact up to it)


def short_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def checked_refs(
    artifacts: Any, checkpoint: Any, metadata: Any
) -> tuple[list[Artifact] | None, CheckpointRef | None, Any]:
    """``artifacts`` and ``checkpoint`` as the event's schema holds them (dicts of
    their fields are taken); a value that is not one is kept as text in the
    event's ``metadata["capture_notes"]``, with a warning, not stored as it is (a
    run holding it could not be read back)."""
    notes: dict[str, str] = {}
    kept: list[Artifact] | None = None
    if artifacts:
        items = [artifacts] if isinstance(artifacts, (str, bytes, dict, Artifact)) else artifacts
        try:
            kept = [Artifact.model_validate(a) for a in items]
        except Exception:
            kept = None
            notes["artifacts"] = f"not a list of artifacts (name, uri): {short_repr(artifacts)}"
    ref: CheckpointRef | None = None
    if checkpoint is not None:
        try:
            ref = CheckpointRef.model_validate(checkpoint)
        except Exception:
            notes["checkpoint"] = (
                f"not a checkpoint reference (framework, checkpoint_id): {short_repr(checkpoint)}"
            )
    if notes:
        log.warning("agentdebug: %s", "; ".join(f"{k} {v}" for k, v in notes.items()))
        base = metadata if isinstance(metadata, dict) else {}
        earlier = base.get("capture_notes")
        merged = {**earlier, **notes} if isinstance(earlier, dict) else notes
        metadata = {**base, "capture_notes": merged}
    return kept, ref, metadata


def as_dict(metadata: Any) -> dict[str, Any]:
    """Metadata to add a key to: a dict as it is; anything else kept under
    ``"value"`` (as the writer keeps metadata that is not a dict), None as nothing."""
    if metadata is None:
        return {}
    if isinstance(metadata, dict):
        return metadata
    return {"value": metadata, "capture_notes": {"metadata_coerced_from": type(metadata).__name__}}


_SAID: set[str] = set()  # unknown field names already logged (each is said once)


def unknown_fields(
    args: tuple[Any, ...], fields: dict[str, Any], agent_name: Any, metadata: Any
) -> tuple[Any, Any]:
    """``record`` given arguments it has no field for: keyword arguments it does
    not know (``agent=``, ``timestamp=``, ``duration=``), positional ones after the
    type. A first positional one is the agent's name (``record(type, "searcher")``)
    when none was given by name; the rest are kept in the event's
    ``metadata["unknown_fields"]`` (positional ones as ``args``), each name logged
    once per process, not raised into the agent (``agentdebug.record`` outside any
    run takes them without a word)."""
    if args and agent_name is None and (args[0] is None or isinstance(args[0], str)):
        agent_name, args = args[0], args[1:]
    kept: dict[str, Any] = dict(fields)
    if args:
        kept["args"] = list(args)
    new = sorted(set(kept) - _SAID)
    if new:
        _SAID.update(new)
        log.warning(
            "agentdebug: record() has no field %s; kept in the event's "
            'metadata["unknown_fields"] (its fields: agent_name, step_index, input, '
            "output, error, module, parent_id, duration_ms, metadata, artifacts, "
            "checkpoint, event_id)",
            ", ".join(map(repr, new)),
        )
    if kept:
        metadata = {**as_dict(metadata), "unknown_fields": kept}
    return agent_name, metadata


def known_status(status: Any, reason: Any) -> tuple[OutcomeStatus, Any]:
    """``set_outcome``'s status as an ``OutcomeStatus``; one it does not know is
    ``unknown``, said in the log and in the reason, so the final answer and the
    reason given with it are still kept."""
    try:
        return OutcomeStatus(status), reason
    except ValueError:
        pass
    given = short_repr(status)
    log.warning(
        "agentdebug: outcome status %s is not one of %s; recorded as unknown", given, _STATUSES
    )
    said = f"(set_outcome was given status {given}, not one of {_STATUSES})"
    text = reason if isinstance(reason, str) else (None if reason is None else safe_str(reason))
    return OutcomeStatus.UNKNOWN, f"{text} {said}" if text else said


_STATUSES = ", ".join(s.value for s in OutcomeStatus if s is not OutcomeStatus.RUNNING)


class Record(Protocol):
    """``TraceSession.record`` as a type checker sees it: the fields an event has.
    At run time it takes others too, and a positional agent name, and keeps them
    (see :func:`unknown_fields`): a call a type checker would refuse must not stop
    the agent."""

    def __call__(
        self,
        type: EventType | str,
        *,
        agent_name: str | None = None,
        step_index: int | None = None,
        input: Any = None,
        output: Any = None,
        error: Any = None,
        module: str | None = None,
        parent_id: str | None = None,
        duration_ms: float | None = None,
        metadata: dict[str, Any] | None = None,
        artifacts: Sequence[Artifact] | None = None,
        checkpoint: CheckpointRef | None = None,
        event_id: str | None = None,
    ) -> str | None: ...
