"""``TraceSession``: the run being recorded, as a context manager.

``record`` is on the agent's hot path, so it does the least it can (number the
event, queue it for the background writer) and never raises: a bad argument or a
broken store is logged and the agent goes on. Sessions come from
:class:`agentdebug.capture.debugger.AgentDebug`.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from contextvars import Token
from datetime import UTC, datetime
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from agentdebug.capture.current import enter, forget, leave
from agentdebug.capture.emit import Emit, emitter
from agentdebug.capture.encode import clean_text, error_dict, jsonable, safe_str, snapshot, to_json
from agentdebug.capture.ending import answer_of_outcome, ended_by
from agentdebug.capture.event_rows import doc_of, merged_events
from agentdebug.capture.fields import (
    MAX_STEP,
    Record,
    as_dict,
    capped_goal,
    checked_refs,
    known_status,
    short_repr,
    text_or_none,
    unknown_fields,
)
from agentdebug.capture.nesting import report_to_outer
from agentdebug.capture.writer import BEHIND, let_go
from agentdebug.errors import NotFoundError
from agentdebug.limits import max_event_bytes
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    Artifact,
    CheckpointRef,
    DiagnosticReport,
    EventType,
    Outcome,
    OutcomeStatus,
)

if TYPE_CHECKING:
    from agentdebug.capture.debugger import AgentDebug

log = logging.getLogger("agentdebug.capture")

_EVENT_TYPES = {t.value: t for t in EventType}
_CONTAINERS = frozenset({dict, list})
_FINAL = EventType.FINAL_ANSWER
_LOOK = 255  # record looks at the writer's backlog every 256 events
_now = time.time
_INF = math.inf


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


class RunMark(NamedTuple):
    """Where a run stopped, for a run that continues it (a resume served by another
    worker, a retry after an error): :meth:`AgentDebug.trace` with ``continues=``
    names it in the new run's ``metadata["continues"]`` and numbers the new run's
    steps and events on from it, so that the two read as one history
    (:func:`agentdebug.store.history.with_history`) without renumbering."""

    run_id: str
    goal: str | None
    last_step: int  # -1: the run recorded no step
    next_seq: int  # the sequence number of the continuing run's first event

    @classmethod
    def of(cls, trajectory: AgentTrajectory) -> RunMark:
        """The mark of a stored run (event ids of the form ``e<n>`` name its sequence)."""
        seqs = [int(e.id[1:]) for e in trajectory.events if e.id[:1] == "e" and e.id[1:].isdigit()]
        return cls(
            trajectory.id,
            trajectory.goal,
            max((e.step_index for e in trajectory.events), default=-1),
            max(max(seqs, default=-1) + 1, len(trajectory.events)),
        )


class TraceSession:
    """One run being recorded. Use as a context manager (sync or async)."""

    def __init__(
        self,
        debugger: AgentDebug,
        *,
        goal: str | None,
        framework: str | None,
        run_id: str,
        agents: list[AgentInfo],
        reference_answer: str | None,
        parent_id: str | None,
        metadata: dict[str, Any],
        branch_from_event_id: str | None = None,
        continues: RunMark | None = None,
    ) -> None:
        self.debugger = debugger
        self.id = run_id
        self.goal = capped_goal(text_or_none(goal, "goal"))  # (the row and header encode)
        self.framework = framework
        self.agents = agents
        self.reference_answer = text_or_none(reference_answer, "reference_answer")
        self.parent_id = parent_id
        self.branch_from_event_id = branch_from_event_id
        self.metadata = metadata
        self.started_at = datetime.now(UTC)
        self.ended_at: datetime | None = None
        self.outcome: Outcome | None = None
        self.store_failed = False
        self.store_error: str | None = None
        self.spill: list[Any] = []
        # ids callers gave, kept unique within the run: id -> the event's sequence
        # number (settling an event's id twice, as a drain put back does, is no repeat)
        self.user_ids: dict[str, int] = {}
        self._counter = itertools.count(continues.next_seq if continues is not None else 0)
        self._last_step = continues.last_step if continues is not None else -1
        self._n_errors = 0
        self._final_answer: Any = None
        self._answer_agent: str | None = None  # who gave the final answer
        self._answered = False  # a final answer event was recorded (its output may be None)
        self._last_agent: Any = None  # the last agent named in a record
        self._token: Token[TraceSession | None] | None = None
        self._outer: TraceSession | None = None  # the run current when this one began
        self._within: TraceSession | None = None  # the run this is a sub-run of (nesting)
        # where in it this run was begun, when a framework's run says (a node's step)
        self._within_at: dict[str, Any] = {}
        # the fields ``agentdebug.record`` gives an event here, while a framework says
        # (a ReAct step under way: its step; see capture.current)
        self._defaults: dict[str, Any] = {}
        # the agent this run stands for in a run it is within, when its framework
        # knows one (a LangGraph run: its graph's name; see nesting.sub_agent)
        self._stands_for: str | None = None
        self._generator: FrameType | None = None  # the generator its `with` is in (current)
        self._writer = debugger._writer_for_capture()
        if self._writer is None:
            self.store_failed = True
            self.store_error = debugger._store_error
        self._memory: list[tuple[Any, ...]] = []  # events when there is no store at all
        self._sink = self._writer.queue.append if self._writer is not None else self._memory.append
        # Queued events name their run by this number, not by the session object: a
        # tuple of plain values leaves the garbage collector's lists at its first
        # pass, where one holding an object is scanned again by every collection
        # while it waits (about a fifth of ``record``'s time). The writer keeps the
        # session alive through an anchor queued ahead of its events instead.
        self._key = self._writer.register(self) if self._writer is not None else 0
        self._limit = max_event_bytes()  # an event over it takes the careful path
        self._anchored = self._writer is None  # an anchor is queued ahead of new events
        if self._writer is not None:
            header = self._header(Outcome(status=OutcomeStatus.RUNNING))
            store = self._writer.store
            self._writer.control(self, lambda: store.begin_run(header))

    def __del__(self) -> None:  # let go of with its run open: see writer.let_go
        if self.__dict__.get("ended_at", True) is None and "_anchored" in self.__dict__:
            let_go(self)

    # -- context management ------------------------------------------------------

    def __enter__(self) -> TraceSession:
        self._token = enter(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is not None:  # a failure, or its caller stopping it (see capture.ending)
                ended_by(self, exc)
            self.close()
        except Exception:
            log.exception("agentdebug: ending run %s failed", self.id)
        finally:
            token, self._token = self._token, None
            leave(self, token)

    async def __aenter__(self) -> TraceSession:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- the hot path -------------------------------------------------------------

    def _record(
        self,
        type: EventType | str,
        *args: Any,
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
        **fields: Any,
    ) -> str | None:
        """Record one event; returns its id. Never raises into the agent.

        ``input``, ``output`` and ``metadata`` are serialised at once, so that the
        record keeps them as they were even if the agent changes them later. An
        ``event_id`` the caller gives is kept unless it repeats one of the run's
        ids (it then gets a ``#<seq>`` suffix) or looks like an automatic one
        (``e12``: it gets ``#u``).

        This is the agent's hot path: it numbers the event and queues it for
        the background writer. An event of plain values is queued as a tuple of
        them (the writer encodes many at once, cheaper per event than one by
        one). An event with a dict or list to freeze is turned into its JSON
        here, in one serialisation, since its payloads would be serialised now
        anyway and then again inside the event. Safe to call from several
        threads: the sequence number comes from an atomic counter (two threads
        recording without explicit steps may share a step number, harmless).
        """
        try:
            if args or fields:  # (rare: a field record has not, or a positional one)
                agent_name, metadata = unknown_fields(args, fields, agent_name, metadata)
            if agent_name is not None:  # (who a sub-run stands for: capture.nesting)
                self._last_agent = agent_name
            if type.__class__ is not EventType:
                type, metadata = self._coerce_type(type, metadata)
            if step_index is None:
                step_index = self._last_step + 1
            elif step_index.__class__ is not int or not 0 <= step_index <= MAX_STEP:
                step_index = self._coerce_step(step_index)
            if step_index > self._last_step:
                self._last_step = step_index
            if artifacts or checkpoint is not None:  # (rare: checked off the common path)
                artifacts, checkpoint, metadata = checked_refs(artifacts, checkpoint, metadata)
            seq = next(self._counter)
            if (
                input.__class__ in _CONTAINERS
                or output.__class__ in _CONTAINERS
                or (metadata.__class__ is dict and metadata)  # a dict's truth never raises
            ):
                if (
                    error is None
                    and event_id is None
                    and (agent_name is None or agent_name.__class__ is str)
                    and (module is None or module.__class__ is str)
                    and (parent_id is None or parent_id.__class__ is str)
                    and (metadata is None or metadata.__class__ is dict)
                    and (
                        duration_ms is None
                        or (
                            (duration_ms.__class__ is float or duration_ms.__class__ is int)
                            and 0 <= duration_ms < _INF
                        )
                    )
                ):
                    # Payloads to freeze: they would be serialised now anyway, and then
                    # again inside the event, so the event is made here in one go (its
                    # fields in the order the writer's careful path writes them).
                    eid = f"e{seq}"
                    doc: dict[str, Any] = {
                        "id": eid,
                        "type": type,
                        "step_index": step_index,
                        "timestamp": _now(),
                    }
                    if agent_name is not None:
                        doc["agent_name"] = agent_name
                    if module is not None:
                        doc["module"] = module
                    if parent_id is not None:
                        doc["parent_id"] = parent_id
                    if duration_ms is not None:
                        doc["duration_ms"] = duration_ms
                    if input is not None:
                        doc["input"] = input
                    if output is not None:
                        doc["output"] = output
                    if metadata:
                        doc["metadata"] = metadata
                    if artifacts:
                        doc["artifacts"] = list(artifacts)
                    if checkpoint is not None:
                        doc["checkpoint"] = checkpoint
                    try:  # as dumps_kept, inline: this is the hot path
                        data: bytes | None = memoryview(
                            orjson.dumps(doc, default=to_json)
                        ).tobytes()
                    except Exception:  # no JSON form, or keys to coerce: the careful path
                        data = None
                    if data is not None and len(data) <= self._limit:
                        if type is _FINAL:
                            self._final_answer = snapshot(output)
                            self._answer_agent = agent_name
                            self._answered = True
                        if not self._anchored:  # just before queueing: see _key
                            self._anchor()
                        self._sink((self._key, seq, data, agent_name))
                        if not seq & _LOOK:
                            self._keep_up()
                        return eid
                if input.__class__ in _CONTAINERS:
                    input = snapshot(input)
                if output.__class__ in _CONTAINERS:
                    output = snapshot(output)
                if metadata.__class__ is dict:
                    metadata = snapshot(metadata) if metadata else None
            if error is not None:
                self._n_errors += 1
            if type is _FINAL:
                self._final_answer = output
                self._answer_agent = agent_name
                self._answered = True
            extra = None
            if artifacts or checkpoint is not None:
                extra = {"artifacts": list(artifacts or ()), "checkpoint": checkpoint}
            if not self._anchored:
                self._anchor()
            eid = f"e{seq}"
            self._sink(
                (
                    self._key,
                    seq,
                    type._value_,  # the str: a member is tracked by the GC, its value not
                    agent_name,
                    step_index,
                    input,
                    output,
                    error,
                    module,
                    parent_id,
                    duration_ms,
                    metadata,
                    extra,
                    event_id,
                    _now(),
                    eid,
                )
            )
            if not seq & _LOOK:
                self._keep_up()
            return event_id or eid
        except Exception:
            log.exception("agentdebug: an event could not be recorded")
            return None

    if TYPE_CHECKING:
        record: Record  # (checked against the fields an event has; see fields.Record)
    else:
        record = _record

    def emitter(self, default: Callable[[Any], Any] = to_json) -> Emit:
        """:meth:`record` for a framework integration on the agent's hot path: a
        function ``emit(doc, agent_name)`` that records an event from a document
        the integration builds itself (see :func:`agentdebug.capture.emit.emitter`).
        ``default`` is orjson's hook for the framework's own objects."""
        return emitter(self, default)

    def record_event(
        self, event: AgentEvent, *, metadata: dict[str, Any] | None = None
    ) -> str | None:
        """Record a copy of an event from another run, keeping its id, step,
        timestamp and payloads (a rerun branch starts with the original's events
        before the resume point). ``metadata`` is merged into the event's own.
        Never raises."""
        try:
            extra = None
            if event.artifacts or event.checkpoint is not None:
                extra = {"artifacts": list(event.artifacts), "checkpoint": event.checkpoint}
            if event.step_index > self._last_step:
                self._last_step = event.step_index
            if event.error is not None:
                self._n_errors += 1
            if event.type is _FINAL:
                self._final_answer = event.output
                self._answer_agent = event.agent_name
                self._answered = True
            merged = {**event.metadata, **metadata} if metadata else event.metadata
            seq = next(self._counter)
            item = (
                self._key,
                seq,
                event.type.value,
                event.agent_name,
                event.step_index,
                snapshot(event.input),
                snapshot(event.output),
                event.error,
                event.module,
                event.parent_id,
                event.duration_ms,
                snapshot(merged) if merged else None,
                extra,
                event.id,
                event.timestamp.timestamp() if event.timestamp else _now(),
                f"e{seq}",
            )
            if not self._anchored:  # just before queueing: see _key
                self._anchor()
            self._sink(item)
            if not seq & _LOOK:
                self._keep_up()
            return event.id
        except Exception:
            log.exception("agentdebug: an event could not be copied")
            return None

    def _keep_up(self) -> None:
        """Every 256 events: if the writer is ``BEHIND``, encode a batch here."""
        writer = self._writer
        if writer is not None and len(writer.queue) >= BEHIND:
            writer.help()

    def _anchor(self) -> None:
        """Queue this session ahead of the events that follow (see ``_key``)."""
        self._anchored = True
        if self._writer is not None:
            self._writer.anchor(self)

    def _coerce_type(
        self, value: Any, metadata: dict[str, Any] | None
    ) -> tuple[EventType, dict[str, Any] | None]:
        found = _EVENT_TYPES.get(safe_str(value))
        if found is not None:
            return found, metadata
        log.warning("agentdebug: unknown event type %r recorded as 'span'", value)
        return EventType.SPAN, {**as_dict(metadata), "original_type": safe_str(value)}

    def _coerce_step(self, value: Any) -> int:
        """A step that is not a whole number from 0 to ``MAX_STEP``: the number it
        reads as (said, when it was not a plain int), else the next one."""
        try:
            step = int(value)
            if 0 <= step <= MAX_STEP:
                if value.__class__ is not int or step != value:
                    log.warning("agentdebug: step_index %r recorded as %d", value, step)
                return step
        except (TypeError, ValueError, OverflowError):
            pass
        log.warning(
            "agentdebug: invalid step_index %s; numbered automatically",
            short_repr(value),
        )
        return self._last_step + 1

    # -- outcome and closing --------------------------------------------------------

    def set_outcome(
        self,
        status: OutcomeStatus | str,
        *,
        final_answer: Any = None,
        reason: str | None = None,
        error: Any = None,
        stopped_by: str | None = None,
    ) -> None:
        """How the run ended. ``stopped_by``: what stopped it before it ended (its
        caller closing the stream, a cancel: the exception's class name). A
        ``final_answer`` in a run that recorded none is recorded as its final-answer
        event too, when the run ends (see :func:`agentdebug.capture.ending.answer_of_outcome`)."""
        try:
            status, reason = known_status(status, reason)
            self.outcome = Outcome(
                status=status,
                final_answer=jsonable(final_answer, self._limit),
                reason=text_or_none(reason, "reason"),
                error=clean_text(error_dict(error)) if error is not None else None,
                stopped_by=text_or_none(stopped_by, "stopped_by"),
            )
        except Exception:
            log.exception("agentdebug: invalid outcome ignored")
            return

    def _inferred_outcome(self) -> Outcome:
        if self.outcome is not None:
            return self.outcome
        if self._n_errors and self._final_answer is None:
            return Outcome(
                status=OutcomeStatus.FAILURE,
                reason=f"{self._n_errors} event(s) carried an error and no final answer was given",
            )
        return Outcome(status=OutcomeStatus.UNKNOWN, final_answer=jsonable(self._final_answer))

    def _header(self, outcome: Outcome) -> AgentTrajectory:
        try:
            return self._header_of(outcome)
        except Exception as exc:  # a header that does not validate must not stop the run
            log.error("agentdebug: run %s header kept minimal: %s", self.id, exc)
            return AgentTrajectory(id=self.id, outcome=outcome, started_at=self.started_at)

    def _header_of(self, outcome: Outcome) -> AgentTrajectory:
        return AgentTrajectory(
            id=self.id,
            goal=self.goal,
            framework=self.framework,
            agents=self.agents,
            outcome=outcome,
            reference_answer=self.reference_answer,
            metadata=self.metadata,
            parent_id=self.parent_id,
            branch_from_event_id=self.branch_from_event_id,
            started_at=self.started_at,
            ended_at=self.ended_at,
        )

    def flush(self) -> None:
        """Write everything recorded so far to the store now."""
        try:
            if self._writer is not None:
                self._writer.flush()
        except Exception:
            log.exception("agentdebug: flush failed")

    def close(self, wait: bool = True) -> None:
        """Finish the run: flush its events and store how it ended. Idempotent. With
        ``wait`` False (an event loop) the writer thread writes it while the caller
        goes on, not waiting for the disk or a locked store; :meth:`flush` waits."""
        if self.ended_at is not None:
            return
        answer_of_outcome(self)  # (a success's answer given only to set_outcome; never raises)
        self.ended_at = datetime.now(UTC)
        try:
            forget(self)  # (no longer a live run for capture.current)
            if self._writer is not None:
                outcome, ended, store = self._inferred_outcome(), self.ended_at, self._writer.store
                self._writer.control(self, lambda: store.finish_run(self.id, outcome, ended))
                if wait:  # on disk when the with block ends
                    self._writer.flush(run_id=self.id)
        except Exception:
            log.exception("agentdebug: closing run %s failed", self.id)
        if self._within is not None:  # a sub-run: the run it is within records how it went
            report_to_outer(self, self._inferred_outcome(), inferred=self.outcome is None)

    def mark(self) -> RunMark:
        """Where this run stands, for a run that will continue it. (It takes a
        sequence number: an event this run records later cannot share an id with
        the continuing run's first.)"""
        return RunMark(self.id, self.goal, self._last_step, next(self._counter))

    # -- reading back --------------------------------------------------------------

    def trajectory(self) -> AgentTrajectory:
        """Everything recorded so far, as a trajectory."""
        self.flush()
        store = self.debugger.store
        outcome = (
            self._inferred_outcome() if self.ended_at else Outcome(status=OutcomeStatus.RUNNING)
        )
        stored = None
        # (what a locked store has not taken yet: read before the store is)
        waiting = self._writer.unwritten(self) if self._writer is not None else []
        if store is not None:
            try:
                stored = store.load_trajectory(self.id)
            except Exception as exc:  # (not stored yet: its start waits with its events)
                if not self.store_failed and not (waiting and isinstance(exc, NotFoundError)):
                    log.error("agentdebug: run %s could not be read back: %s", self.id, exc)
        if stored is not None and not self.spill and not self._memory and not waiting:
            return stored.model_copy(update={"outcome": outcome, "ended_at": self.ended_at})
        return self._from_memory(stored, outcome, waiting)

    def _from_memory(
        self, stored: AgentTrajectory | None, outcome: Outcome, waiting: list[bytes]
    ) -> AgentTrajectory:
        docs = [row.data for row in self.spill] + waiting
        docs += [doc_of(item, None, self._limit) for item in self._memory]
        events = merged_events(list(stored.events) if stored is not None else [], docs)
        events.sort(key=lambda e: (e.timestamp or self.started_at, e.step_index))
        return self._header(outcome).model_copy(update={"events": events})

    def analyze(self, *, attributor: str | None = None, **options: Any) -> DiagnosticReport:
        """Diagnose the run as recorded so far and keep the report beside it."""
        return self.debugger.diagnose(self.trajectory(), attributor=attributor, **options)
