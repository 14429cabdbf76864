"""The checks and coercions ``record`` and a run's header apply to fields a
user's agent passes: text fields, the goal, step numbers, artifact and checkpoint
references. A value that is not what the field holds is coerced or kept as a
note, with a warning, never stored as it is (a run holding it could not be read
back) and never raised into the agent."""

from __future__ import annotations

import logging
from typing import Any

from agentdebug.capture.encode import clean_text
from agentdebug.schema import Artifact, CheckpointRef

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
