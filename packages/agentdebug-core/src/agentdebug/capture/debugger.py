"""``AgentDebug``: the entry point that opens the store and hands out sessions.

It owns the store (opened on first use) and the one background writer that all
its sessions share; a session (:mod:`agentdebug.capture.session`) is the run
being recorded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

from agentdebug.capture import forking
from agentdebug.capture.current import live_run
from agentdebug.capture.encode import jsonable
from agentdebug.capture.fields import text_or_none
from agentdebug.capture.nesting import WITHIN
from agentdebug.capture.process import settle_abandoned, this_process
from agentdebug.capture.session import RunMark, TraceSession, new_run_id
from agentdebug.capture.store_health import locked_now
from agentdebug.capture.writer import BackgroundWriter, retire
from agentdebug.schema import AgentInfo, AgentTrajectory, DiagnosticReport
from agentdebug.store import SQLiteStore, TraceStore, open_store
from agentdebug.store.base import CONTINUES, RECORDED_BY

DIAGNOSIS_THREAD = "agentdebug-diagnosis"  # (its own close would wait for itself)
log = logging.getLogger("agentdebug.capture")


class AgentDebug:
    """Entry point: opens the store lazily and hands out trace sessions.

    ``store`` is a store object, a path (see :func:`agentdebug.store.open_store`)
    or None for ``$AGENTDEBUG_HOME`` / ``./.agentdebug``.
    """

    def __init__(
        self,
        store: TraceStore | str | Path | None = None,
        *,
        attributor: str = "heuristic",
        flush_interval: float = 0.1,
    ) -> None:
        self._store_arg = store
        self._store: TraceStore | None = (
            store if not isinstance(store, (str, Path, type(None))) else None
        )
        self._writer: BackgroundWriter | None = None
        self._settling: threading.Thread | None = None  # (settle_abandoned, at first capture)
        self._lock = threading.Lock()
        # diagnoses under way elsewhere -> the run each is of
        self._diagnosing: dict[Future[Any], str | None] = {}
        self._store_error: str | None = None
        self._on_close: list[Callable[[], None]] = []
        self._closing = False  # (close() is running its hooks: one given now runs at once)
        self.attributor = attributor
        self.flush_interval = flush_interval
        forking.track(self)

    def _forget_after_fork(self) -> None:
        """In a forked child: the store and writer are the parent's (see
        :mod:`agentdebug.capture.forking`); a store opened from a path or the
        default location is opened again on first use, with a writer of its own."""
        self._lock = threading.Lock()  # (the parent may have held it as it forked)
        self._writer = None
        self._settling = None
        self._diagnosing = {}
        if self._store is not None and isinstance(self._store_arg, (str, Path, type(None))):
            self._store = None  # (its connection is left to the parent, not closed)
        self._store_error = None

    @property
    def store(self) -> TraceStore | None:
        """The store, opened on first use; None (with the reason logged) if it cannot open."""
        if self._store is None and self._store_error is None:
            with self._lock:
                if self._store is None and self._store_error is None:
                    try:
                        self._store = open_store(self._store_arg)  # type: ignore[arg-type]
                    except Exception as exc:
                        self._store_error = str(exc)
                        log.error(
                            "agentdebug: cannot open the store (%s); runs stay in memory", exc
                        )
        return self._store

    def _writer_for_capture(self) -> BackgroundWriter | None:
        if self._writer is None:
            store = self.store
            if store is None:
                return None
            with self._lock:
                if self._writer is None:
                    self._writer = BackgroundWriter(store, interval=self.flush_interval)
                    # runs a killed process of this machine left "running" are stored
                    # as ended, off the agent's thread (a service restarting settles
                    # what its predecessor left); only where that is a query, not a
                    # read of the whole store (a JSON Lines file: the CLI settles it)
                    if isinstance(store, SQLiteStore):
                        self._settle(store)
        return self._writer

    def _settle(self, store: TraceStore) -> None:
        self._settling = threading.Thread(
            target=settle_abandoned,
            args=(store,),
            kwargs={"quiet": True},
            name="agentdebug-settle",
            daemon=True,
        )
        self._settling.start()

    def trace(
        self,
        goal: str | None = None,
        *,
        framework: str | None = None,
        run_id: str | None = None,
        agents: Sequence[AgentInfo | str] = (),
        reference_answer: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        branch_from_event_id: str | None = None,
        continues: RunMark | None = None,
    ) -> TraceSession:
        """A new run to record into; use it as a context manager. Never raises: a
        value of the wrong type is coerced (its text), and logged.

        ``continues``: the run this one picks up after (:meth:`TraceSession.mark`
        of a live run, ``RunMark.of`` a stored one): named in
        ``metadata["continues"]``, its goal used when none is given, and its steps
        and events numbered on, so the two read as one history."""
        meta = jsonable(metadata) if isinstance(metadata, dict) else _wrapped(metadata)
        if continues is not None:
            meta = {**meta, CONTINUES: continues.run_id}
            goal = goal if goal is not None else continues.goal
        meta = {**meta, RECORDED_BY: this_process()}  # (abandoned runs: capture.process)
        # begun inside a run being recorded here: its sub-run (see capture.nesting)
        found = live_run() if parent_id is None and continues is None else None
        outer = found[0] if found is not None else None
        if outer is not None:
            meta = {**meta, WITHIN: outer.id}
        session = TraceSession(
            self,
            goal=text_or_none(goal, "goal"),
            framework=text_or_none(framework, "framework"),
            run_id=text_or_none(run_id, "run_id") or new_run_id(),
            agents=[_agent(a) for a in (agents or ())],
            reference_answer=text_or_none(reference_answer, "reference_answer"),
            parent_id=text_or_none(parent_id, "parent_id"),
            branch_from_event_id=text_or_none(branch_from_event_id, "branch_from_event_id"),
            metadata=meta,
            continues=continues,
        )
        session._within = outer
        if found is not None and found[1]:  # (begun in a LangGraph node: where in its run)
            session._within_at = dict(found[1])
        return session

    def history(self, trajectory: AgentTrajectory) -> AgentTrajectory:
        """``trajectory`` read with the runs it continues, from this debugger's store
        (see :func:`agentdebug.store.history.with_history`); as it is otherwise."""
        from agentdebug.store.history import with_history

        return with_history(self.store, trajectory)

    def diagnose(
        self, trajectory: AgentTrajectory, *, attributor: str | None = None, **options: Any
    ) -> DiagnosticReport:
        """Diagnose a trajectory and keep the report in the store (if there is one).

        ``options`` are those of :func:`agentdebug.diagnose.diagnose` (settings,
        budget, judge, with_reference, no_fallback)."""
        from agentdebug.diagnose import diagnose
        from agentdebug.rerun.record import carried_verification

        report = diagnose(trajectory, attributor=attributor or self.attributor, **options)
        store, writer = self.store, self._writer
        if store is None:
            return report
        try:
            report = carried_verification(store, report)
            if getattr(store, "read_only", None) or (
                writer is not None and writer.health.read_only is not None
            ):
                return report  # (said once: "nothing is saved to it")
            run = writer.session_of(trajectory.id) if writer is not None else None
            if writer is not None and run is not None and not run.store_failed:
                kept = report  # behind the run's events: a lock holds up no one
                writer.control(run, lambda: store.save_report(kept))
                if not writer.flush(run_id=run.id):
                    log.info("agentdebug: report %s waits with its run for the store", report.id)
            elif locked_now(store):
                log.warning(
                    "agentdebug: report %s not stored: the store at %s is locked by another "
                    "connection (run `agentdebug diagnose %s` again to keep one)",
                    report.id,
                    getattr(store, "location", store),
                    trajectory.id,
                )
            else:
                store.save_report(report)
        except Exception as exc:
            log.error("agentdebug: report %s not stored: %s", report.id, exc)
        return report

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def keep_open_for(self, future: Future[Any], run_id: str | None = None) -> None:
        """A diagnosis of one of this debugger's runs (``run_id``) under way on
        another thread (``capture.auto.diagnose_in_background``, an async loop's
        worker thread): ``close`` waits for it, so its report is stored."""
        with self._lock:
            self._diagnosing[future] = run_id
        future.add_done_callback(self._diagnosed)

    def _diagnosed(self, future: Future[Any]) -> None:
        with self._lock:
            self._diagnosing.pop(future, None)

    def on_close(self, fn: Callable[[], None]) -> None:
        """Have ``fn`` called when this debugger closes, before its store does: a
        plugin closing the runs it holds open (a LangGraph run waiting at an
        interrupt), which could not be written once the store is closed. Each is
        called once; one that raises is logged. Given while the debugger is
        closing, it runs at once."""
        with self._lock:
            if not self._closing:
                self._on_close.append(fn)
                return
        _run_hook(fn)

    def close(self) -> None:
        """Finish: close the runs plugins hold open (:meth:`on_close`), wait for
        its diagnoses under way (their reports go to this store), write what is
        queued, close the store."""
        with self._lock:
            hooks, self._on_close, self._closing = self._on_close, [], True
        try:
            for fn in hooks:
                _run_hook(fn)
            self._finish()
        finally:
            with self._lock:
                self._closing = False  # (it may be used again: its store reopens)

    def _finish(self) -> None:
        with self._lock:
            diagnosing = dict(self._diagnosing)
        if diagnosing and not threading.current_thread().name.startswith(DIAGNOSIS_THREAD):
            runs = ", ".join(sorted({r for r in diagnosing.values() if r}))
            # (a wait at exit, or in a service's shutdown, is said: it can take a
            # model's calls per run)
            what, reports = diagnoses_and_reports(len(diagnosing))
            of = f" (of {'runs' if ',' in runs else 'run'} {runs})" if runs else ""
            log.warning("agentdebug: waiting for %s under way%s to store %s", what, of, reports)
            wait(list(diagnosing))
        settling, self._settling = self._settling, None
        if settling is not None:
            settling.join(timeout=10)  # (it writes to the store about to close)
        if self._writer is not None:  # (its runs still open end now, said so)
            retire(self._writer, "the debugger was closed with the run still open")
            self._writer = None
        if self._store is not None:
            self._store.close()
            self._store = None


def _run_hook(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:
        log.exception("agentdebug: a plugin's work at close failed")


def diagnoses_and_reports(n: int) -> tuple[str, str]:
    """How a wait for ``n`` diagnoses is said: ("a diagnosis", "its report"), or
    ("3 diagnoses", "their reports")."""
    return (f"{n} diagnoses", "their reports") if n > 1 else ("a diagnosis", "its report")


def _agent(value: Any) -> AgentInfo:
    try:
        if isinstance(value, AgentInfo):
            return value
        if isinstance(value, dict):
            return AgentInfo.model_validate(value)
    except Exception as exc:
        log.warning("agentdebug: agent %r not understood (%s); its text is used", value, exc)
    return AgentInfo(name=str(value.get("name", value)) if isinstance(value, dict) else str(value))


def _wrapped(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    log.warning("agentdebug: metadata should be a dict, got %s", type(metadata).__name__)
    return {"value": jsonable(metadata)}
