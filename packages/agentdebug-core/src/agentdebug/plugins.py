"""Hook specifications and the plugin manager.

Everything that can be swapped (detectors, attributors, failure modes, importers,
and later recoverers and rerun executors) is contributed through these hooks. The
built-ins in :mod:`agentdebug.builtin` register the same way a third-party package
does: an entry point in group ``agentdebug`` naming a module with ``@hookimpl``
functions.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy

from agentdebug.errors import NotFoundError
from agentdebug.schema import AgentTrajectory, DiagnosticReport
from agentdebug.stages import Attributor, Detector, Importer, Recoverer, RerunExecutor
from agentdebug.taxonomy.model import FailureMode

log = logging.getLogger("agentdebug.plugins")

PROJECT = "agentdebug"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """What a plugin may contribute. Each hook is called with no arguments unless
    stated, and each implementation returns a list (results are concatenated)."""

    @hookspec
    def agentdebug_failure_modes(self) -> Sequence[FailureMode]:
        """Failure modes to add to the taxonomy. Called once when the registry is
        built; an id that is already taken is refused with a warning."""
        raise NotImplementedError

    @hookspec
    def agentdebug_detectors(self) -> Sequence[Detector]:
        """Detectors to run on every diagnosis. Each finding's ``mode_id`` must name
        a registered failure mode."""
        raise NotImplementedError

    @hookspec
    def agentdebug_attributors(self) -> Sequence[Attributor]:
        """Attributors selectable by name (``diagnose --attributor NAME``)."""
        raise NotImplementedError

    @hookspec
    def agentdebug_importers(self) -> Sequence[Importer]:
        """Importers tried, in registration order, by format auto-detection."""
        raise NotImplementedError

    @hookspec
    def agentdebug_recoverers(self) -> Sequence[Recoverer]:
        """Recoverers selectable by name (``act --recover NAME``); each turns a report
        into a RecoveryPlan and changes nothing itself."""
        raise NotImplementedError

    @hookspec
    def agentdebug_rerun_executors(self) -> Sequence[RerunExecutor]:
        """Rerun executors, keyed by their ``framework``; the closed loop uses the one
        whose framework matches the run's when the user names none."""
        raise NotImplementedError

    @hookspec
    def agentdebug_debugging_hints(self, trajectory: AgentTrajectory) -> Sequence[str]:
        """Short descriptions of similar past cases (failure, cause, fix) that a
        diagnosis agent may use as hints; called by DeepDebug's global read, with
        the run being diagnosed. (The Error Hub, once built, is to implement it.)"""
        raise NotImplementedError

    @hookspec
    def agentdebug_on_report(self, report: DiagnosticReport, trajectory: AgentTrajectory) -> None:
        """Called after every diagnosis with the finished report; return nothing.
        An exception here is logged and does not fail the diagnosis."""


_IN_CODE: list[tuple[object, str | None]] = []  # plugins registered with register_plugin


def make_plugin_manager(*, load_entry_points: bool = True) -> pluggy.PluginManager:
    """A plugin manager with the built-ins, every installed ``agentdebug`` plugin
    and those registered in code (:func:`register_plugin`)."""
    from agentdebug import builtin

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(HookSpecs)
    pm.register(builtin, name="builtin")
    if load_entry_points:
        pm.load_setuptools_entrypoints(PROJECT)
        for plugin, name in list(_IN_CODE):
            pm.register(plugin, name=name)
    return pm


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Add a plugin (an object or module with ``@hookimpl`` methods) to this process
    without packaging it: the registry is rebuilt with it, and so after every
    :func:`reset_registry`. Registering one again is a no-op."""
    if any(p is plugin for p, _ in _IN_CODE):
        return
    _IN_CODE.append((plugin, name))
    reset_registry()


@dataclass
class Registry:
    """What the installed plugins contribute, by name."""

    failure_modes: dict[str, FailureMode] = field(default_factory=dict)
    detectors: dict[str, Detector] = field(default_factory=dict)
    attributors: dict[str, Attributor] = field(default_factory=dict)
    importers: dict[str, Importer] = field(default_factory=dict)
    recoverers: dict[str, Recoverer] = field(default_factory=dict)
    rerun_executors: dict[str, RerunExecutor] = field(default_factory=dict)
    plugin_manager: pluggy.PluginManager | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_plugin_manager(cls, pm: pluggy.PluginManager) -> Registry:
        reg = cls(plugin_manager=pm)
        hook = pm.hook
        # Hook results come newest-registered first; reverse so the built-ins
        # (registered first) win name clashes and keep their order.
        for modes in reversed(hook.agentdebug_failure_modes()):
            for mode in modes:
                reg._add(reg.failure_modes, mode.id, mode, "failure mode")
        for detectors in reversed(hook.agentdebug_detectors()):
            for det in detectors:
                reg._add(reg.detectors, det.name, det, "detector")
        for attributors in reversed(hook.agentdebug_attributors()):
            for att in attributors:
                reg._add(reg.attributors, att.name, att, "attributor")
        for importers in reversed(hook.agentdebug_importers()):
            for imp in importers:
                reg._add(reg.importers, imp.name, imp, "importer")
        for recoverers in reversed(hook.agentdebug_recoverers()):
            for rec in recoverers:
                reg._add(reg.recoverers, rec.name, rec, "recoverer")
        for executors in reversed(hook.agentdebug_rerun_executors()):
            for ex in executors:
                reg._add(reg.rerun_executors, ex.framework, ex, "rerun executor")
        return reg

    def _add(self, table: dict[str, Any], key: str, value: Any, kind: str) -> None:
        if key in table:
            msg = f"{kind} '{key}' is registered twice; keeping the first"
            self.warnings.append(msg)
            log.warning(msg)
            return
        table[key] = value

    def attributor(self, name: str) -> Attributor:
        try:
            return self.attributors[name]
        except KeyError:
            known = ", ".join(sorted(self.attributors))
            raise NotFoundError(f"unknown attributor '{name}' (known: {known})") from None

    def detector(self, name: str) -> Detector:
        try:
            return self.detectors[name]
        except KeyError:
            known = ", ".join(sorted(self.detectors))
            raise NotFoundError(f"unknown detector '{name}' (known: {known})") from None

    def recoverer(self, name: str) -> Recoverer:
        try:
            return self.recoverers[name]
        except KeyError:
            known = ", ".join(sorted(self.recoverers))
            raise NotFoundError(f"unknown recoverer '{name}' (known: {known})") from None

    def failure_mode(self, mode_id: str) -> FailureMode:
        try:
            return self.failure_modes[mode_id]
        except KeyError:
            raise NotFoundError(f"unknown failure mode '{mode_id}'") from None

    def notify_report(self, report: DiagnosticReport, trajectory: AgentTrajectory) -> None:
        if self.plugin_manager is None:
            return
        try:
            self.plugin_manager.hook.agentdebug_on_report(report=report, trajectory=trajectory)
        except Exception:  # a plugin's bug must not fail the diagnosis
            log.exception("an agentdebug_on_report hook failed")


_default: Registry | None = None
_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, built on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = Registry.from_plugin_manager(make_plugin_manager())
        return _default


def reset_registry() -> None:
    """Forget the cached registry (after installing or blocking a plugin)."""
    global _default
    with _lock:
        _default = None
