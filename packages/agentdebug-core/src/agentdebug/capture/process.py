"""Which process records a run, and whether that process is gone.

A run is stored ``running`` from its start until its process ends it. A process
that is killed (SIGKILL, the OOM killer, SIGTERM under Python's default action,
which runs no exit hook, a machine that loses power) never does, and its runs
would read "running" for good, indistinguishable from live ones. So every run's
header names the process recording it (``metadata["recorded_by"]``: host, pid,
boot id, machine id, pid namespace, and the process's start time, which tells a
reused pid apart), and a run whose process is known to be gone is *abandoned*:
:func:`gone` says why, and :func:`settle_abandoned` stores it as ended (status
unknown, ``stopped_by`` saying so), which a debugger does at its first capture
into a SQLite store, and the CLI before the commands that read runs.

Only a process on this machine, since its last boot, in this process's pid
namespace, can be known gone (and a restart only where the machine's id says it is
this machine): a run recorded on another host (a shared folder), or in another pid
namespace (a container on the host's network has the host's name; a container
restarted after a kill comes back in a new one), stays as it is, and is never
settled by guesswork.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from agentdebug.schema import Outcome, OutcomeStatus
from agentdebug.store.base import RECORDED_BY, RunQuery

if TYPE_CHECKING:
    from agentdebug.store.base import RunSummary, TraceStore

log = logging.getLogger("agentdebug.capture")

ABANDONED = "the recording process ended"  # an abandoned run's Outcome.stopped_by
_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_MACHINE_ID = "/etc/machine-id"
_stamp: tuple[int, dict[str, str]] | None = None  # (pid, stamp): remade after a fork


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (Linux's
    ``/proc/<pid>/stat``, field 22), or None where that cannot be read."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # (the name, in parentheses, may hold spaces)
    return fields[19] if len(fields) > 19 else None


def _zombie(pid: int) -> bool:
    """Exited, not yet reaped by its parent (its main thread a zombie, and no other
    thread left: one whose main thread alone exited goes on)."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rpartition(")")[2].split() if stat else []
    if not fields or fields[0] not in ("Z", "X"):
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


def this_process() -> dict[str, str]:
    """The stamp a run recorded here carries under ``recorded_by``."""
    global _stamp
    pid = os.getpid()
    if _stamp is None or _stamp[0] != pid:  # (a forked child is another process)
        stamp = {"host": socket.gethostname(), "pid": str(pid)}
        boot = (_read(_BOOT_ID) or "").strip()
        if boot:
            stamp["boot"] = boot
        machine = (_read(_MACHINE_ID) or "").strip()
        if machine:
            stamp["machine"] = machine
        with contextlib.suppress(OSError):  # pids are numbered per namespace: a
            stamp["pidns"] = os.readlink("/proc/self/ns/pid")  # container's 7 is not ours
        started = _start_ticks(pid)
        if started is not None:
            stamp["started"] = started
        _stamp = (pid, stamp)
    return dict(_stamp[1])


def describe(recorder: dict[str, str]) -> str:
    return f"pid {recorder['pid']} on {recorder['host']}"


def gone(recorder: dict[str, str] | None) -> str | None:
    """Why the process that recorded a run is known to be gone, or None when it is
    alive or cannot be known (another host, no stamp)."""
    if recorder is None:
        return None
    here = this_process()
    if recorder["host"] != here["host"]:
        return None
    try:
        pid = int(recorder["pid"])
    except ValueError:
        return None
    boot, machine = recorder.get("boot"), recorder.get("machine")
    if boot and here.get("boot") and boot != here["boot"]:
        # the same machine (its id, not only its name: clones share names) restarted
        if machine and machine == here.get("machine"):
            return f"the machine restarted after its process ({describe(recorder)}) recorded it"
        return None
    if sys.platform.startswith("linux") and not (recorder.get("pidns") and here.get("pidns")):
        return None  # (a namespace unknown on Linux: a sandbox that hides it)
    if recorder.get("pidns") != here.get("pidns"):
        return None
    if pid == os.getpid():
        same = recorder.get("started") == here.get("started")
        return None if same else f"its process ({describe(recorder)}) ended before the run did"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"its process ({describe(recorder)}) ended before the run did"
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return None
    started = recorder.get("started")
    if started is not None and (now := _start_ticks(pid)) is not None and now != started:
        return f"its process ({describe(recorder)}) ended before the run did (the pid is reused)"
    if _zombie(pid):
        return f"its process ({describe(recorder)}) ended before the run did"
    return None


def abandoned_outcome(why: str) -> Outcome:
    """How an abandoned run is stored: ended, outcome unknown, stopped by its
    process's end (so nothing is blamed unless a fault is found in it)."""
    return Outcome(
        status=OutcomeStatus.UNKNOWN,
        stopped_by=ABANDONED,
        reason=f"abandoned: {why}; found so on {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
    )


def was_abandoned(outcome: Outcome) -> bool:
    """Whether a run was stored as abandoned (it may hold what any run stopped in
    the middle holds: a wait at an interrupt, a step half done)."""
    return outcome.stopped_by == ABANDONED


def abandoned(runs: Iterable[RunSummary]) -> dict[str, str]:
    """Of these runs, those stored running whose process is gone: id -> why."""
    out: dict[str, str] = {}
    for run in runs:
        if run.status == OutcomeStatus.RUNNING.value:
            why = gone(run.recorded_by)
            if why is not None:
                out[run.id] = why
    return out


def settle_abandoned(store: TraceStore, *, quiet: bool = False) -> dict[str, str]:
    """Store every abandoned run of this machine as ended (see
    :func:`abandoned_outcome`): id -> why. Never raises: a store that cannot be
    read or written leaves its runs as they are, said in a warning (a debug line
    if ``quiet``: a debugger doing it in the background, where the store may be
    closing, or read-only to this user)."""
    try:
        here = ((f"{RECORDED_BY}.host", this_process()["host"]),)
        running_here = RunQuery(status=OutcomeStatus.RUNNING.value, metadata=here, limit=None)
        found = abandoned(store.list_runs(running_here))
        if found:  # asked again now that their processes are known gone: one that
            # wrote its run's end and exited between the two questions keeps that end
            still = {run.id for run in store.list_runs(running_here)}
            found = {run_id: why for run_id, why in found.items() if run_id in still}
        for run_id, why in found.items():
            store.finish_run(run_id, abandoned_outcome(why), None)
    except Exception as exc:
        (log.debug if quiet else log.warning)(
            "agentdebug: abandoned runs could not be settled: %s", exc
        )
        return {}
    if found:
        log.info("agentdebug: %d abandoned run(s) stored as ended", len(found))
    return found
