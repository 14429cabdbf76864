"""Automatic diagnosis when a captured run fails, for framework plugins.

Every plugin does the same thing when the run it watches raises or fails the
user's success check: diagnose in-process with the configured pipeline (the free
tier without a model, the router with one), store the report, log a one-paragraph
summary, add it to the exception as a PEP 678 note, and hand the report to the
user's ``on_report`` callback. None of it may change what the user's code sees:
the exception propagates unchanged (only the note is added) and a failure of the
diagnosis itself is logged, never raised.

Nor may it hold the user's program up for long: its model calls, retries
included, have a deadline in all (the setting ``auto_deadline``, 60 s by default;
``agentdebug diagnose`` has none), after which the free tier answers, as for any
other model failure; and a diagnosis still waiting on the model after
``WAIT_NOTICE`` seconds says so in one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import logging
import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdebug.audit import FALLBACK, FREE_TIER_INSTEAD, HEURISTIC_INSTEAD
from agentdebug.capture.debugger import DIAGNOSIS_THREAD, AgentDebug, diagnoses_and_reports
from agentdebug.capture.encode import safe_str
from agentdebug.errors import ConfigError
from agentdebug.schema import AgentTrajectory, DiagnosticReport
from agentdebug.store import DB_NAME

if TYPE_CHECKING:
    from agentdebug.llm import LLMSettings
    from agentdebug.llm.budget import Deadline

log = logging.getLogger("agentdebug.auto")

ReportCallback = Callable[[DiagnosticReport], Any]


MODES = (True, False, "inline", "background")  # a plugin's ``diagnose=`` option


def check_mode(mode: Any, where: str) -> bool | str:
    """A plugin's ``diagnose=`` option, checked: True (inline, or in the background
    when an async run would call a model: see :func:`in_background`), False,
    "inline", "background"."""
    if mode not in MODES or mode.__class__ not in (bool, str):
        raise ValueError(
            f"{where}(diagnose=...) takes True, False, 'inline' or 'background', not {mode!r}"
        )
    return mode


def in_background(mode: bool | str, asynchronous: bool | None = None) -> bool:
    """Whether a failed run's diagnosis should leave the thread it ended on:
    asked for (``"background"``), or by default when the run was an async one
    (``asynchronous``; when the plugin cannot tell, whether this thread runs an
    event loop) and the diagnosis would call a model: seconds of network calls
    would hold up every other task of the loop. A sync call stays inline even on
    a thread with a loop (a notebook cell), as the free tier does everywhere (it
    takes milliseconds), so their note is on the exception."""
    if mode == "background":
        return True
    if mode is not True:
        return False
    if asynchronous is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
    elif not asynchronous:
        return False
    return configured_attributor() != "heuristic"


_warming: threading.Thread | None = None  # (warm_up's, once per process)
_WARM = "agentdebug.diagnose"  # imported by warm_up (and so, once there, no more to do)


def warm_up() -> None:
    """Import the diagnosis (its stages, the plugin registry, the configuration)
    on a thread of its own, once per process: for an async agent, whose first
    failure would otherwise import it on the event loop's thread, holding up
    every task of the loop (about 0.3 s here), although the free tier's
    diagnosis then takes milliseconds. A plugin calls it as an async run starts;
    a failure before the imports are done waits for them, as it would have.
    Never raises."""
    global _warming
    if _warming is not None or _WARM in sys.modules:
        return
    _warming = threading.Thread(target=_import_diagnosis, name="agentdebug-warm-up", daemon=True)
    with contextlib.suppress(RuntimeError):  # (no new threads: the interpreter is ending)
        _warming.start()


def _import_diagnosis() -> None:
    try:
        for name in (_WARM, "agentdebug.llm", "agentdebug.store.history"):
            importlib.import_module(name)
        from agentdebug.plugins import get_registry

        get_registry()
    except Exception:  # the failure's own import will say what is wrong
        log.debug("agentdebug: the diagnosis could not be imported ahead", exc_info=True)


MAX_WAITING = 64  # diagnoses queued at once; a burst beyond is not diagnosed (said)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_waiting = 0  # submitted, not finished


def _diagnosis_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:  # one thread: diagnoses queue up rather than multiply
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=DIAGNOSIS_THREAD)
        # The interpreter's exit waits for the pool's thread to finish what is
        # queued (concurrent.futures joins it); say so, or the exit looks hung.
        # threading's exit hooks run last registered first, so this one comes
        # before that join. (A private hook: without it the wait is only unsaid.)
        hook = getattr(threading, "_register_atexit", None)
        if hook is not None:
            with contextlib.suppress(RuntimeError):  # (already shutting down)
                hook(_say_exit_wait)
    return _pool


def _say_exit_wait() -> None:
    with _pool_lock:
        n = _waiting
    if n:
        settings = _model_settings({})
        seconds = settings.auto_deadline if settings is not None and settings.configured else 0
        if n == 1:
            bound = f" (its model calls end within {seconds:g} s: auto_deadline)"
        else:  # (after one runs out, the others' deadline is short: see _deadline_for)
            short = min(seconds, SHORT_DEADLINE)
            most = seconds + (n - 1) * short
            bound = (
                f" (the model calls of each end within {seconds:g} s, auto_deadline, and "
                f"within {short:g} s once one has run out: {most:g} s at most in all)"
            )
        log.warning(
            "agentdebug: the exit waits for %s under way, to store %s%s",
            *diagnoses_and_reports(n),
            bound if seconds else "",
        )


def _forget_pool_in_child() -> None:
    """A forked child has the parent's pool but not its thread: a new one starts."""
    global _pool, _pool_lock, _waiting
    _pool, _pool_lock, _waiting = None, threading.Lock(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def diagnose_in_background(
    debugger: AgentDebug,
    trajectory: AgentTrajectory,
    *,
    exc: BaseException | None = None,
    on_report: ReportCallback | None = None,
    attributor: str | None = None,
    **options: Any,
) -> Future[DiagnosticReport | None]:
    """:func:`diagnose_failure` on agentdebug's diagnosis thread: the caller (an
    event loop) goes on at once. ``exc`` gets a note saying the diagnosis is
    under way and where its report will be; when it is done, its summary is
    logged, the report stored and handed to ``on_report`` (on that thread), as
    inline. The settings in force here (``use_settings``) go with it. Diagnoses
    queue on one thread (at most ``MAX_WAITING``: a burst beyond that is not
    diagnosed, and the note says so); ``debugger.close()`` and the interpreter's
    exit wait for those under way. Never raises."""
    global _waiting
    rid = trajectory.id
    with _pool_lock:
        full = _waiting >= MAX_WAITING
        if not full:
            _waiting += 1
    if full:
        log.warning("agentdebug: run %s not diagnosed: %d diagnoses are waiting", rid, _waiting)
        _note(
            exc,
            f"agentdebug did not diagnose run {rid}: {MAX_WAITING} diagnoses were "
            f"already waiting ({command(debugger, 'diagnose', rid)})",
        )
        skipped: Future[DiagnosticReport | None] = Future()
        skipped.set_result(None)
        return skipped
    context = contextvars.copy_context()

    def work() -> DiagnosticReport | None:
        global _waiting
        try:
            return context.run(
                diagnose_failure,
                debugger,
                trajectory,
                on_report=on_report,
                attributor=attributor,
                **options,
            )
        finally:
            with _pool_lock:
                _waiting -= 1

    _note(
        exc,
        f"agentdebug is diagnosing run {rid} in the background; its report will be in "
        f"the store ({command(debugger, 'show', rid)})",
    )
    try:
        with _pool_lock:
            future = _diagnosis_pool().submit(work)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        future = Future()
        future.set_result(work())
    debugger.keep_open_for(future, rid)
    return future


def _note(exc: BaseException | None, note: str) -> None:
    if exc is None:
        return
    try:
        exc.add_note(note)
    except Exception:  # an exception type that refuses notes
        log.debug("agentdebug: could not add a note to %r", exc)


def configured_attributor() -> str:
    """``auto`` (the router) when a model is configured, else the free-tier heuristic."""
    from agentdebug.llm import current_settings

    try:
        return "auto" if current_settings().configured else "heuristic"
    except Exception as exc:  # a broken config file must not stop the diagnosis
        log.warning("agentdebug: model settings unreadable (%s); the free tier is used", exc)
        return "heuristic"


#: Seconds a diagnosis waits on the model before it says so (once) in the log.
WAIT_NOTICE = 5.0
#: How a deadline error says the automatic diagnosis's deadline can be changed.
DEADLINE_HINT = "the setting auto_deadline, AGENTDEBUG_AUTO_DEADLINE, changes it"


def _deadline_name(seconds: float) -> str:
    from agentdebug.llm.budget import seconds_text

    return f"the automatic diagnosis's {seconds_text(seconds)} s deadline for model calls"


#: Seconds the model calls of an automatic diagnosis get while the model is known
#: not to answer (its last diagnosis's deadline ran out, less than ``COOL_OFF`` ago):
#: diagnoses queued behind a hung endpoint do not each wait the whole deadline.
SHORT_DEADLINE = 5.0
COOL_OFF = 300.0
_ran_out: dict[tuple[str | None, str | None], float] = {}  # (base URL, model) -> when
_ran_out_lock = threading.Lock()


def _endpoint(settings: LLMSettings) -> tuple[str | None, str | None]:
    return (settings.base_url, settings.model)


def _deadline_for(settings: LLMSettings | None) -> tuple[float, str, bool]:
    """The deadline of a diagnosis's model calls (0: none), how errors name it, and
    whether it is shortened: ``auto_deadline``, or ``SHORT_DEADLINE`` while the
    model is known not to answer (for ``COOL_OFF`` seconds from when its whole
    deadline ran out: then it gets the whole deadline again)."""
    import time

    if settings is None or not settings.configured or not settings.auto_deadline:
        return 0.0, "", False
    seconds = settings.auto_deadline
    with _ran_out_lock:
        when = _ran_out.get(_endpoint(settings))
    if when is None or time.monotonic() - when >= COOL_OFF or seconds <= SHORT_DEADLINE:
        return seconds, _deadline_name(seconds), False
    ago = time.monotonic() - when
    return (
        SHORT_DEADLINE,
        (
            f"{_deadline_name(SHORT_DEADLINE)} (shortened: the model gave no answer within "
            f"{seconds:g} s {ago:.0f} s ago)"
        ),
        True,
    )


def _ran_out_or_not(
    settings: LLMSettings | None,
    limit: Deadline | None,
    shortened: bool,
    report: DiagnosticReport | None,
) -> None:
    """Remember that the model did not answer within a diagnosis's whole deadline
    (the next diagnoses get ``SHORT_DEADLINE``), or forget it once it answered. A
    short deadline that runs out does not start the wait again (a model slower than
    it gets the whole deadline when the wait is over), nor does a diagnosis that
    asked the model nothing (the free tier's, an answer from the cache) forget it."""
    import time

    if settings is None or limit is None:
        return
    with _ran_out_lock:
        if limit.left() <= 0:
            if not shortened:
                _ran_out[_endpoint(settings)] = time.monotonic()
        elif report is not None and report.cost.calls > 0:
            _ran_out.pop(_endpoint(settings), None)


def _model_settings(options: dict[str, Any]) -> LLMSettings | None:
    """The model settings the diagnosis will use (None: unreadable, so the free
    tier, which ``diagnose`` says)."""
    from agentdebug.llm import current_settings

    given = options.get("settings")
    if given is not None:
        return given  # type: ignore[no-any-return]
    try:
        return current_settings()
    except Exception:
        return None


@contextlib.contextmanager
def _said_when_slow(
    rid: str, settings: LLMSettings | None, limit: Deadline | None, options: dict[str, Any]
) -> Iterator[None]:
    """Inside: after ``WAIT_NOTICE`` seconds, one warning line saying that the
    diagnosis of run ``rid`` waits on the model, and for how long at most, so a
    program that has not gone on is not a mystery."""
    if (
        settings is None
        or not settings.configured
        or (
            limit is not None and limit.seconds <= WAIT_NOTICE  # (it ends before the notice)
        )
    ):
        yield
        return
    strict = options.get("no_fallback")
    strict = settings.no_fallback if strict is None else strict
    where = f" at {settings.base_url}" if settings.base_url else ""
    waiting = (
        f"agentdebug: the diagnosis of run {rid} is waiting for model '{settings.model}'{where}"
    )

    def say() -> None:
        if limit is None:
            log.warning("%s (auto_deadline is 0: no deadline)", waiting)
            return
        from agentdebug.llm.budget import seconds_text

        then = "gives up" if strict else "answers with the free tier"
        log.warning(
            "%s; it %s after at most %s s more (auto_deadline = %s s)",
            waiting,
            then,
            seconds_text(max(limit.left(), 0.0)),
            seconds_text(limit.seconds),
        )

    timer = threading.Timer(WAIT_NOTICE, say)
    timer.daemon = True
    with contextlib.suppress(RuntimeError):  # (no new threads: the interpreter is ending)
        timer.start()
    try:
        yield
    finally:
        timer.cancel()


def command(debugger: AgentDebug | None, verb: str, run_id: str) -> str:
    """The command line that does ``verb`` to a run of ``debugger``'s store, with
    ``--store`` and its absolute path: pasted in another directory or shell (a
    service's log read elsewhere, a store given as ``AgentDebug("runs")``), a command
    without it finds another store, or none."""
    where = getattr(getattr(debugger, "store", None), "location", None)
    if not where:
        return f"agentdebug {verb} {run_id}"
    try:
        path = Path(where).resolve()
    except (OSError, ValueError, RuntimeError):
        path = Path(where)
    folder = path.parent if path.name == DB_NAME else path  # (the folder reads shorter)
    return f"agentdebug --store {shlex.quote(str(folder))} {verb} {run_id}"


def summary_paragraph(report: DiagnosticReport, debugger: AgentDebug | None = None) -> str:
    """The report in one paragraph: what failed, the root cause, the fix, where to look
    (the commands, for ``debugger``'s store)."""
    parts = [f"agentdebug diagnosis {report.id} of run {report.trajectory_id}:", report.summary]
    if report.fix is not None:
        parts.append(f"Suggested fix: {report.fix.directive}")
    failed = [n for n in report.notes if n.endswith((FALLBACK, HEURISTIC_INSTEAD))]
    if failed:  # not a silent fallback: a model stage did not answer
        parts.append(f"A model stage did not answer: {failed[0]}.")
    unread = [n for n in report.notes if n.endswith(FREE_TIER_INSTEAD)]
    if unread:  # nor a model configured wrongly, and so not used
        parts.append(f"{unread[0][:1].upper()}{unread[0][1:]}.")
    rid = report.trajectory_id
    if _stored(debugger, rid):
        parts.append(f"({command(debugger, 'show', rid)} / {command(debugger, 'diagnose', rid)})")
    else:  # (a store this process cannot write: no command would find the run)
        where = getattr(getattr(debugger, "store", None), "location", None)
        parts.append(
            f"(the run and this report are not in the store{f' at {where}' if where else ''}, "
            "which could not be written: they are in this process's memory only)"
        )
    return " ".join(p for p in parts if p)


def _stored(debugger: AgentDebug | None, run_id: str) -> bool:
    """Whether ``run_id`` can be read back from ``debugger``'s store (None: no
    debugger given, as before: the commands are said)."""
    if debugger is None:
        return True
    store = getattr(debugger, "store", None)
    try:
        return store is not None and store.resolve_id(run_id) == run_id
    except Exception:
        return False


def diagnose_failure(
    debugger: AgentDebug,
    trajectory: AgentTrajectory,
    *,
    exc: BaseException | None = None,
    on_report: ReportCallback | None = None,
    attributor: str | None = None,
    **options: Any,
) -> DiagnosticReport | None:
    """Diagnose a failed run, keep the report, tell the user. Never raises.

    ``exc`` (when the run raised) gets the summary as a note; ``options`` go to
    :func:`agentdebug.diagnose.diagnose`. A run that continues another (a resume,
    a retry) is diagnosed with the runs before it (:meth:`AgentDebug.history`):
    the cause of its failure may be there. Returns the report, or None when the
    diagnosis itself failed (logged)."""
    from agentdebug.llm import LLMError
    from agentdebug.llm.budget import deadline_scope

    settings, limit, shortened = None, None, False
    try:
        if not trajectory.events:
            log.warning("agentdebug: run %s failed before recording anything", trajectory.id)
            return None
        chosen = attributor or configured_attributor()
        settings = _model_settings(options)
        seconds, name, shortened = _deadline_for(settings)
        with (
            deadline_scope(seconds or None, name, hint=DEADLINE_HINT) as limit,
            _said_when_slow(trajectory.id, settings, limit, options),
        ):
            report = debugger.diagnose(debugger.history(trajectory), attributor=chosen, **options)
        _ran_out_or_not(settings, limit, shortened, report)
    except Exception as failed:
        _ran_out_or_not(settings, limit, shortened, None)  # (no_fallback: it raised)
        said = (
            f"agentdebug could not diagnose run {trajectory.id}: "
            f"{type(failed).__name__}: {safe_str(failed)} "
            f"({command(debugger, 'diagnose', trajectory.id)} tries again)"
        )
        if isinstance(failed, LLMError | ConfigError):
            # A model that failed (with no_fallback), or a setting: expected, and
            # said in one line, not as a crash (its traceback only at DEBUG level).
            log.warning("%s", " ".join(said.split()))
            log.debug("agentdebug: the automatic diagnosis failed", exc_info=True)
        else:  # a fault of agentdebug's own: its traceback is wanted
            log.exception("agentdebug: the automatic diagnosis of run %s failed", trajectory.id)
        _note(exc, said)  # (said where the user looks, as a report would be)
        return None
    paragraph = summary_paragraph(report, debugger)
    log.warning("%s", paragraph)
    _note(exc, paragraph)
    if on_report is not None:
        try:
            on_report(report)
        except Exception:
            log.exception("agentdebug: the on_report callback failed")
    return report
