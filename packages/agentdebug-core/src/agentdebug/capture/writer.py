"""The background writer: takes events off the agent's hot path and into the store.

``record`` only appends a tuple to a deque; so do the start and the end of a run
(as control items, so they keep their order among the events). A daemon thread
wakes every ``interval`` seconds (at once for a run's start or end), turns the
queued tuples into JSON, one array per run and chunk, and hands them to a second
thread that writes them in order, one transaction per run, so a process killed
mid-run keeps everything up to the last flush.

Every time a thread wakes it takes the GIL from the agent, and a thread that
gives the GIL up (to let SQLite work) waits for it to come back, up to the
interpreter's switch interval, while the agent runs. So the threads wake seldom
and do much each time: the writer once an interval, the store thread once per
hand-over, with all that waits written as one statement. An agent that records
faster than that (``BEHIND`` events waiting) encodes a batch on its own thread
(:meth:`BackgroundWriter.help`), which bounds the queue while the store keeps
up and spares the hand-overs; SQLite's share still runs beside it, on the store
thread. The agent never waits for the store: when the store is slow, events wait
in memory.

A store that does not take a write is handled by
:mod:`agentdebug.capture.store_health`: a read-only one is not tried, a locked
one is tried again in the background until the lock goes (the events waiting in
memory), any other failure a moment, then the run is kept in memory (the
session's spill) so it can still be analysed. A flush, and so the end of a run,
waits for the store only while it takes writes. The agent is never interrupted.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import operator
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentdebug.capture import store_health
from agentdebug.capture.encode import ENCODED_LEN, EVENT_ID, RUN_KEY, SEQ, event_id
from agentdebug.capture.event_rows import one_by_one, rows_of, unwritten_docs
from agentdebug.capture.store_health import StoreHealth
from agentdebug.gcutil import gc_paused
from agentdebug.limits import max_event_bytes
from agentdebug.store.base import EventBatch, EventRow, TraceStore

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

CHUNK = 4096  # events encoded at a time
BATCH = 16384  # the most events written in one transaction
BATCH_BYTES = 64 * 1024 * 1024  # the most JSON written in one transaction
AHEAD = 4  # the most encoded submissions waiting for the store thread
BEHIND = 8192  # queued events at which ``record`` encodes a batch itself
_CONTROL = object()  # first slot of a queued start/end of a run
_ANCHOR = object()  # first slot of a session queued ahead of its events
_key_of = operator.itemgetter(RUN_KEY)

# One run's events in a chunk: (session, queued tuples, position -> the id settled
# for an event that came with its own)
_Batch = tuple["TraceSession", list[tuple[Any, ...]], dict[int, str]]
# What is written in order: a session's rows, or a store call for it
_Job = tuple["TraceSession", "Sequence[EventRow] | Callable[[], None]"]


class BackgroundWriter:
    """One writer thread per store; sessions share it."""

    def __init__(self, store: TraceStore, *, interval: float = 0.1) -> None:
        self.store = store
        self.interval = interval
        self.queue: deque[tuple[Any, ...]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._wrote = False  # since the store's last idle moment
        # run key -> session; the session lives as long as its agent holds it or an
        # anchor of it waits in the queue, and two whole drains longer (``_held``)
        self._sessions: weakref.WeakValueDictionary[int, TraceSession] = (
            weakref.WeakValueDictionary()
        )
        self._keys = itertools.count(1)
        self._held: list[TraceSession] = []
        self._held_before: list[TraceSession] = []
        self._lost = 0  # events whose session was gone (logged once)
        self._limit = max_event_bytes()
        # encoded jobs go to the store thread in order; counted so a flush can wait
        self._jobs: deque[list[_Job]] = deque()
        self._ready_lock = threading.Lock()
        self._ready = threading.Condition(self._ready_lock)
        self._submitted = 0
        self._done = 0
        self._store_running = True
        self._writing: list[_Job] = []  # what the store thread is writing now
        self._taken: list[tuple[Any, ...]] = []  # what a drain took from the queue
        self.health = StoreHealth(store)  # read-only, locked: see capture.store_health
        self._thread = threading.Thread(target=self._loop, name="agentdebug-writer", daemon=True)
        self._store_thread = threading.Thread(
            target=self._store_loop, name="agentdebug-store", daemon=True
        )
        self._thread.start()
        self._store_thread.start()
        _OPEN.add(self)
        _WRITERS.add(self)

    def register(self, session: TraceSession) -> int:
        """The number a new session's events carry in the queue."""
        key = next(self._keys)
        self._sessions[key] = session
        return key

    def anchor(self, session: TraceSession) -> None:
        """Queue the session itself ahead of its next events: the queue holds it
        until they are written, even if the agent lets go of it first."""
        self.queue.append((_ANCHOR, session))

    def control(self, session: TraceSession, action: Callable[[], None]) -> None:
        """Queue a store call (a run's start or end) in order with the events."""
        self.queue.append((_CONTROL, session, action))
        self._wake.set()

    def help(self) -> None:
        """Called by ``record`` when ``BEHIND`` events wait: the recording thread
        encodes a batch of them itself and hands it to the store thread. A burst
        that outpaces the writer thread then costs its GIL share in one place,
        instead of three threads taking it from one another every switch interval
        (each hand-over a wait). Never waits for the store: if the writer is
        encoding, the store thread has ``AHEAD`` batches to write already, or it
        has stopped (the debugger was closed), the events stay queued. Raises
        nothing but a KeyboardInterrupt (which puts the batch back in the queue):
        a batch that cannot be encoded is logged, as on the writer thread."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            # (with the store thread stopped, at exit or after close, the batch is
            # written here: nothing else would take it from the queue)
            if not self._store_running or self._submitted - self._done < AHEAD:
                self._drain_locked(BATCH)
        except KeyboardInterrupt:
            raise
        except BaseException:  # a payload's repr may raise anything
            log.exception("agentdebug: a batch of events could not be encoded")
        finally:
            self._lock.release()

    # -- the drain -----------------------------------------------------------------

    def flush(self, wait: float | None = None, run_id: str | None = None) -> bool:
        """Write everything queued so far; True once it is in the store. Waits
        while the store takes writes, but not for a store that takes none:
        after ``wait`` seconds (``END_WAIT``) without a write done it returns
        False, said once (for ``run_id``'s run, when given), what is queued left
        queued to be written when the store takes writes again; until then a flush
        with no ``wait`` given does not wait at all (see capture.store_health)."""
        health = self.health
        limit = wait if wait is not None else 0.0 if health.stalled else store_health.END_WAIT
        start = time.monotonic()

        def late() -> bool:
            return health.left(start, limit) <= 0

        while not self._lock.acquire(timeout=min(0.1, limit)):
            if late():  # (the writer thread waits for the store, holding the lock)
                health.stall(run_id, waited=limit)
                return False
        try:
            whole = self._drain_locked(late=late)
            target = self._submitted
        finally:
            self._lock.release()
        with self._ready_lock:
            while self._done < target and self._store_running:
                if sys.is_finalizing():  # the store thread is frozen: it will not come
                    log.error("agentdebug: events recorded during interpreter shutdown were lost")
                    return False
                if late():
                    health.stall(run_id, waited=limit)
                    return False
                self._ready.wait(min(1.0, max(0.01, health.left(start, limit))))
        return whole

    def _drain_locked(
        self, most: int | None = None, late: Callable[[], bool] | None = None
    ) -> bool:
        """Encode what is queued, ``CHUNK`` events at a time (so the objects being
        built stay few and their memory is reused), and hand it to the store
        thread: at every start or end of a run, when ``BATCH`` events wait, and at
        the end.

        A whole drain (the writer thread, a flush) takes everything queued when it
        starts. A partial one (``most`` items, on a recording thread: ``help``)
        never waits for the store thread: it stops once ``AHEAD`` batches wait to
        be written, and puts what it took and did not hand over back at the
        queue's front. So does a signal (Ctrl-C) that interrupts it: a recording
        thread is often the main one, where signals land. So does a whole drain
        whose wait for the store thread grew ``late`` (a flush: the store is stuck);
        False then."""
        queue = self.queue
        # Only what is queued now: chasing an agent that keeps recording would
        # mean a stream of small transactions, each costing a commit and a GIL
        # hand-over; what it records meanwhile waits for the next round. Taken in
        # one call (no bytecode runs in between, so no signal handler either).
        n = len(queue) if most is None else min(len(queue), most)
        taken = self._taken = list(map(operator.call, itertools.repeat(queue.popleft, n)))
        handed = 0  # taken[:handed] is with the store thread
        upto, expect = 0, -1  # the hand-over in flight: taken[:upto], the count it makes
        held: list[TraceSession] = []
        keys: list[Any] | None = None  # the items' run keys and lengths, made on first use
        lens: list[int] = []
        try:
            jobs: list[_Job] = []
            waiting = 0
            i = 0
            while i < n:
                batches: dict[int, _Batch] = {}
                pending: tuple[Any, ...] | None = None
                last: _Batch | None = None
                last_key = None
                tried = False  # the all-one-run check, once a chunk
                end = min(i + CHUNK, n)
                while i < end:
                    item = taken[i]
                    i += 1
                    key = item[0]
                    if key is _ANCHOR:
                        anchored: TraceSession = item[1]
                        anchored._anchored = False  # the next event queues a new anchor
                        held.append(anchored)
                        continue
                    if key is _CONTROL:
                        pending = item
                        break
                    if key == last_key and (len(item) == ENCODED_LEN or item[EVENT_ID] is None):
                        last[1].append(item)  # type: ignore[index]  # same run, no caller's id
                        continue
                    last = self._add(batches, item)
                    last_key = key if last is not None else None
                    if last is not None and not tried and i < end and len(item) == ENCODED_LEN:
                        # The rest of the chunk all this run's encoded events (as a
                        # busy integration's are: TraceSession.emitter)? Taken at
                        # once, counted in C: the loop above costs the GIL per event.
                        # Asked once a chunk: runs recording in turn would otherwise
                        # have the rest of the chunk counted at every turn.
                        tried = True
                        if keys is None:
                            keys, lens = list(map(_key_of, taken)), list(map(len, taken))
                        left = end - i
                        if (
                            keys[i:end].count(key) == left
                            and lens[i:end].count(ENCODED_LEN) == left
                        ):
                            last[1].extend(taken[i:end])
                            i = end
                with gc_paused():
                    for session, items, ids in batches.values():
                        jobs.append((session, self._safe_rows(items, ids)))
                        waiting += len(items)
                if pending is not None:
                    jobs.append((pending[1], pending[2]))
                if jobs and (pending is not None or waiting >= BATCH or i >= n):
                    upto, expect = i, self._submitted + 1
                    if not self._submit(jobs, wait=most is None, late=late):
                        return False  # (the rest goes back to the queue: finally)
                    handed = i
                    jobs = []
                    waiting = 0
                    if most is not None and self._submitted - self._done >= AHEAD:
                        break
            handed = i  # the rest, if any, was left for later (``AHEAD``)
            return True
        except KeyboardInterrupt:
            if self._submitted == expect:  # it came after the hand-over in flight
                handed = max(handed, upto)
            raise
        except BaseException:  # a bug: what this drain took since its last hand-over
            handed = max(handed, i)  # is lost (logged by the caller), the rest kept
            raise
        finally:
            self._taken = []
            if handed < n:
                queue.extendleft(reversed(taken[handed:]))  # in order, ahead of newer ones
            # Sessions anchored in this drain stay alive through the next two whole
            # drains: an event recorded while its anchor was being taken may come
            # a drain later. A partial drain may leave any number of a session's
            # events behind its anchor, so it only adds to what is held; the next
            # whole drain takes all of them.
            if most is None:
                self._held_before, self._held = self._held, held
            else:
                self._held.extend(held)

    def _add(self, batches: dict[int, _Batch], item: tuple[Any, ...]) -> _Batch | None:
        key = item[RUN_KEY]
        batch = batches.get(key)
        if batch is None:
            session = self._sessions.get(key)
            if session is None:  # cannot happen while anchors precede events
                self._lost += 1
                if self._lost == 1:
                    log.error("agentdebug: an event of a run no longer recorded was dropped")
                return None
            batch = batches[key] = (session, [], {})
        session = batch[0]
        if len(item) != ENCODED_LEN and item[EVENT_ID] is not None:  # a caller's id: unique
            given = event_id(item)
            seq = item[SEQ]
            if session.user_ids.setdefault(given, seq) != seq:  # another event's id
                given = f"{given}#{seq}"
                session.user_ids[given] = seq
            batch[2][len(batch[1])] = given
        batch[1].append(item)
        return batch

    def _safe_rows(self, items: list[tuple[Any, ...]], ids: dict[int, str]) -> Sequence[EventRow]:
        """The run's rows for these events (:func:`rows_of`), and should that fail, a
        row per event by the total path: one odd event must never cost the others
        in the drain (or a run's end)."""
        try:
            return rows_of(items, ids, self._limit)
        except Exception:
            log.exception("agentdebug: batch encoding failed; events written one by one")
            return one_by_one(items, ids, self._limit)

    # -- writing ------------------------------------------------------------------

    def _submit(
        self, jobs: list[_Job], *, wait: bool = True, late: Callable[[], bool] | None = None
    ) -> bool:
        """Hand encoded jobs to the store thread and go on encoding: SQLite works
        without the GIL, so the next chunk is encoded while this one is written.
        Waits while ``AHEAD`` submissions are still unwritten (memory stays
        bounded), unless ``wait`` is False (a recording thread helping, which
        checks that limit itself). Once the store thread has stopped (the writer
        was closed, and a run goes on recording), the jobs are written here, so
        nothing waits for a thread that is gone, and a failing store still ends
        in the session's spill. False (nothing handed over) once that wait grows
        ``late``."""
        with self._ready_lock:  # (a C lock: no signal between taking it and the block)
            while wait and self._store_running and self._submitted - self._done >= AHEAD:
                if late is not None and late():
                    return False
                self._ready.wait(1.0 if late is None else 0.1)
            if self._store_running:
                # counted first: a signal can land only after the append, with both
                # done, so an interrupted drain knows the batch was handed over
                self._submitted += 1
                self._jobs.append(jobs)
                self._ready.notify_all()
                return True
        self._run(jobs)  # the store thread wrote all it was given before it stopped
        return True

    def _store_loop(self) -> None:
        """The store thread: write submitted jobs in the order they came, all that
        wait at once (a run's batches become one statement): each statement costs
        this thread a wait for the GIL when SQLite is done, so when it falls behind
        it catches up in fewer, longer statements."""
        jobs_queue = self._jobs
        while True:
            with self._ready_lock:
                while not jobs_queue:
                    if self._stopped:
                        self._store_running = False  # decided under the lock: _submit sees it
                        self._ready.notify_all()
                        return
                    self._ready.wait(1.0)  # (a notify lost to a signal costs a second)
                taken = len(jobs_queue)
                jobs = self._writing = [job for _ in range(taken) for job in jobs_queue.popleft()]
            try:
                self._run(jobs)
            except BaseException:  # the thread must survive anything
                log.exception("agentdebug store writes failed")
            del jobs  # the written bytes, and the sessions, are not kept while idle
            self._writing = []
            with self._ready_lock:
                self._done += taken
                self._wrote = True  # after the write: the next idle moment folds it in
                self.health.progressed(caught_up=self._done == self._submitted)
                self._ready.notify_all()

    def _run(self, jobs: list[_Job]) -> None:
        """Run the jobs in order; a run's batches that follow on are written as one."""
        i = 0
        while i < len(jobs):
            session, work = jobs[i]
            i += 1
            if callable(work):
                self._guard(session, work)
                continue
            rows: Sequence[EventRow] = work
            if isinstance(rows, EventBatch):
                parts = [rows]
                size = len(rows.array)
                while i < len(jobs):
                    follow = jobs[i]
                    nxt = follow[1]
                    if (
                        follow[0] is not session
                        or not isinstance(nxt, EventBatch)
                        or nxt.first != parts[-1].first + parts[-1].length
                        or size + len(nxt.array) > BATCH_BYTES
                    ):
                        break
                    parts.append(nxt)
                    size += len(nxt.array)
                    i += 1
                if len(parts) > 1:
                    rows = EventBatch(
                        parts[0].first,
                        sum(p.length for p in parts),
                        b"[" + b",".join(p.array[1:-1] for p in parts) + b"]",
                        set().union(*(p.agents for p in parts)),
                    )
            if session.store_failed or not self._guard(
                session,
                lambda s=session, r=rows: self.store.append_events(s.id, r),  # type: ignore[misc]
            ):
                session.spill.extend(rows)

    def _guard(self, session: TraceSession, action: Callable[[], None]) -> bool:
        """Run a store call, never breaking the agent: a locked store is waited out
        on the store thread, a read-only one not tried (see capture.store_health)."""
        on_store_thread = threading.current_thread() is self._store_thread
        return self.health.guard(session, action, waits_out_locks=on_store_thread)

    # -- the thread -----------------------------------------------------------------

    def _loop(self) -> None:
        """Write what is queued every ``interval`` seconds (at once for a run's start
        or end); a burst faster than that is encoded by the recording thread itself
        (:meth:`help`). Each time this thread wakes it takes the GIL from the agent."""
        while not self._stopped:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                if self.queue:
                    with self._lock:  # encode and hand over; the store thread writes
                        self._drain_locked()
                elif self._wrote and self._done == self._submitted:
                    self._wrote = False  # nothing queued, nothing being written
                    idle = getattr(self.store, "idle", None)  # a user's store may lack it
                    if idle is not None and idle() is False:  # (not done: a reader
                        self._wrote = True  # held the log back; the next wake tries again)
            except BaseException:  # the thread must survive anything (a payload's
                log.exception("agentdebug writer failed")  # repr may even raise SystemExit)

    def close(self) -> None:
        """Write what is queued (waiting ``store_health.EXIT_WAIT`` seconds at most for a store
        that takes no write, then saying which runs were not written), and stop."""
        _OPEN.discard(self)
        written = self.flush(wait=store_health.EXIT_WAIT)
        if not written and not sys.is_finalizing():
            self.health.give_up(store_health.EXIT_WAIT, self._waiting_runs())
        self._stopped = True
        self._wake.set()
        with self._ready_lock:
            self._ready.notify_all()
        self._thread.join(timeout=5 if written else 0.1)  # (not for a thread stuck
        self._store_thread.join(timeout=5 if written else 0.1)  # in the store's lock)

    def session_of(self, run_id: str) -> TraceSession | None:
        """The live session of ``run_id``, if this writer has it (its report is then
        queued behind its events: a lock holds up neither the caller nor the order)."""
        for ref in self._sessions.valuerefs():  # (a copy made at once: threads add)
            session = ref()
            if session is not None and session.id == run_id:
                return session
        return None

    def unwritten(self, session: TraceSession) -> list[bytes]:
        """The JSON of ``session``'s events not in the store yet (queued, taken by a
        drain, handed over, being written), for its ``trajectory`` while a lock keeps
        them out. Read upstream first, the store last: an event moving on meanwhile
        is read twice, not missed (once per id for the reader)."""
        items = [*self.queue, *self._taken]
        with self._ready_lock:
            jobs = [*(job for jobs in self._jobs for job in jobs), *self._writing]
        return unwritten_docs(session, jobs, items, self._limit)

    def _waiting_runs(self) -> list[str]:
        """The runs whose writes wait: being written, handed over, or queued."""
        sessions: list[TraceSession | None] = [job[0] for job in self._writing]
        sessions += [job[0] for jobs in list(self._jobs) for job in jobs]
        for item in [*self._taken, *self.queue]:
            found = item[1] if item[0] is _CONTROL or item[0] is _ANCHOR else None
            sessions.append(found or self._sessions.get(item[RUN_KEY]))
        return [session.id for session in sessions if session is not None]


def _flush_at_exit() -> None:
    """At exit, for every writer not closed: write what is queued, then stop its
    threads, so that what is recorded later still (a stream generator closed as the
    interpreter tears down ends its run then) is written on the recording thread
    itself (the daemon threads freeze during finalisation). One hook for all,
    registered below: after the integrations' own, before the open runs' ends."""
    for writer in list(_OPEN):
        try:
            writer.close()
        except Exception:
            log.exception("agentdebug: final flush failed")


_OPEN: weakref.WeakSet[BackgroundWriter] = weakref.WeakSet()  # (not yet closed)
_WRITERS: weakref.WeakSet[BackgroundWriter] = weakref.WeakSet()  # (not yet retired)
AT_EXIT = "the process exited with the run still open"  # the reason of such a run


def end_open_runs(writer: BackgroundWriter, why: str) -> None:
    """Store the runs still open on ``writer`` as ended, ``why`` in their reason,
    so that none is left "running" for good: one a daemon thread was recording
    (the interpreter stops such threads where they stand), or one never closed.
    Its outcome is the one it was given or would have had at its close (unknown,
    or a failure if it carried errors without an answer).

    The session itself stays open: a run that still ends (a stream generator
    closed as the interpreter tears down, which its integration ends in its own
    words; a daemon thread that gets to its end) writes its own end over this
    one. Written before this returns; never raises."""
    now = datetime.now(UTC)
    ended = 0
    for session in list(writer._sessions.values()):
        if session.ended_at is not None:
            continue
        try:
            writer.control(session, _ending(writer, session, why, now))
            ended += 1
        except Exception:
            log.exception("agentdebug: run %s could not be ended", session.id)
    if ended:
        try:
            writer.flush()  # (once for them all: an exit with many open is not slowed)
        except Exception:
            log.exception("agentdebug: %d run(s) still open could not be ended", ended)


def _ending(
    writer: BackgroundWriter, session: TraceSession, why: str, now: datetime
) -> Callable[[], None]:
    """The store call that ends a run still open: the outcome it was given or would
    have had at its close, ``why`` added to its reason."""
    outcome = session._inferred_outcome()
    reason = f"{outcome.reason}; {why}" if outcome.reason else why
    outcome = outcome.model_copy(update={"reason": reason})
    return functools.partial(writer.store.finish_run, session.id, outcome, now)


LET_GO = "the run was let go of without being closed"  # the reason of such a run


def let_go(session: TraceSession) -> None:
    """A session collected with its run still open (neither a ``with`` block nor
    ``close()`` ended it): its run is ended in the store, ``LET_GO`` in its reason,
    rather than left "running" for good. Called by the session's finaliser, on
    whatever thread the collection runs on and at any point of it, so it only
    queues the end (a lock-free append; the writer takes it at its next wake)
    and never raises. Nothing is queued once the writer has stopped: the exit or
    the debugger's close ended what was open."""
    try:
        writer = session._writer
        if writer is None or writer._stopped:
            return
        now = session.ended_at = datetime.now(UTC)
        writer.queue.append((_CONTROL, session, _ending(writer, session, LET_GO, now)))
    except Exception:
        pass


def retire(writer: BackgroundWriter, why: str) -> None:
    """Before a debugger closes its store: end its runs still open (see
    :func:`end_open_runs`) while the store can take them, then close the writer;
    the exit leaves it alone after that."""
    _WRITERS.discard(writer)
    end_open_runs(writer, why)
    writer.close()


def _end_open_runs_at_exit() -> None:
    """At exit, :func:`end_open_runs` on every writer not retired. Registered when
    this module is first imported, so it runs after the exit hooks of the
    integrations (they close the runs they hold open, such as a graph waiting at
    an interrupt, in their own words) and after each writer's final flush: these
    ends are written on this thread."""
    for writer in list(_WRITERS):
        end_open_runs(writer, AT_EXIT)


atexit.register(_end_open_runs_at_exit)
atexit.register(_flush_at_exit)  # (exit hooks run last registered first)
