"""Hook specifications and the plugin manager.

Everything that can be swapped (detectors, attributors, failure modes, importers,
and later recoverers and rerun executors) is contributed through these hooks. The
built-ins in :mod:`agentdebug.builtin` register the same way a third-party package
does: an entry point in group ``agentdebug`` naming a module with ``@hookimpl``
functions.

A plugin's bug is the plugin's, not agentdebug's, and does not stop the rest: a
plugin that cannot be imported, a hook implementation that raises or returns
something the hook does not take, is skipped with a warning naming the plugin and
its distribution (:class:`PluginProblem`), and ``agentdebug plugins`` lists it as
broken. Each hook implementation is called on its own (not through pluggy's
hook call, which stops at the first exception) for the same reason.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import types
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
BUILTIN = "builtin"  # the name the built-in plugin is registered under
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """What a plugin may contribute. Each hook is called with no arguments unless
    stated, and each implementation returns a list (results are concatenated).

    Each implementation is called on its own. One that raises, or returns anything
    but a list, has its contribution skipped; an item that is not what the hook
    asks for (a detector with no ``name``, a failure mode given as a string) is
    skipped alone. Each is a warning naming the plugin, its distribution and what
    was wrong, and ``agentdebug plugins`` lists the plugin as broken; the rest of
    agentdebug goes on. A plugin module that raises while it is imported is
    skipped whole, the same way."""

    @hookspec
    def agentdebug_failure_modes(self) -> Sequence[FailureMode]:
        """Failure modes (:class:`~agentdebug.taxonomy.FailureMode` objects) to add
        to the taxonomy. Called once when the registry is built; an id that is
        already taken is refused with a warning naming both plugins (the built-ins
        keep theirs)."""
        raise NotImplementedError

    @hookspec
    def agentdebug_detectors(self) -> Sequence[Detector]:
        """Detectors to run on every diagnosis. Each finding's ``mode_id`` must name
        a registered failure mode: a finding whose mode none registers is kept in
        the report, marked ``metadata["unknown_mode"]``, with a note, but is not
        used to name the root cause (a mode no one defined has no remedy to
        propose). A ``detect`` that raises, or returns anything but
        :class:`~agentdebug.schema.Finding` objects, has its findings left out,
        with a note naming the detector."""
        raise NotImplementedError

    @hookspec
    def agentdebug_attributors(self) -> Sequence[Attributor]:
        """Attributors selectable by name (``diagnose --attributor NAME``). One whose
        ``attribute`` raises or returns anything but
        :class:`~agentdebug.schema.Hypothesis` objects is replaced by the heuristic,
        with a note."""
        raise NotImplementedError

    @hookspec
    def agentdebug_importers(self) -> Sequence[Importer]:
        """Importers tried, in registration order, by format auto-detection. An
        importer may declare the file suffixes it reads (``suffixes = (".log",)``,
        see :class:`~agentdebug.stages.Importer`): folder imports then pick those
        files up, and a file with a suffix that is not JSON's is handed to the
        importers as text when it is not JSON."""
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
        the run being diagnosed. (The Error Hub, once built, is to implement it.)
        Each plugin's implementation is called on its own: one that raises or
        answers with no list is left out, with a note on the report, and the
        diagnosis goes on with the others' hints."""
        raise NotImplementedError

    @hookspec
    def agentdebug_on_report(self, report: DiagnosticReport, trajectory: AgentTrajectory) -> None:
        """Called after every diagnosis with the finished report; return nothing.
        Each plugin's implementation is called on its own: one that raises is
        logged (a warning naming the plugin, once per process) and the others
        still run; the diagnosis does not fail."""


@dataclass(frozen=True)
class PluginProblem:
    """Something wrong with one plugin, said in its name: it could not be loaded
    (``hook`` is None), one of its hook implementations failed or gave what the hook
    does not take (``broken``), or it offered a name another plugin had taken."""

    plugin: str
    where: str | None  # its distribution ("name version"), or "registered in code"
    reason: str
    hook: str | None = None
    broken: bool = True

    @property
    def who(self) -> str:
        return f"plugin '{self.plugin}'" + (f" ({self.where})" if self.where else "")

    def __str__(self) -> str:
        return f"{self.who}: {self.reason}"


class PluginManager(pluggy.PluginManager):
    """pluggy's plugin manager, which also keeps where each plugin came from and the
    plugins that could not be loaded or registered."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.origins: dict[str, str] = {}  # plugin name -> its distribution, or how it came
        self.problems: list[PluginProblem] = []

    def add(self, plugin: object, name: str | None, where: str) -> None:
        """Register ``plugin``; one pluggy refuses (a hook implementation whose
        arguments its hookspec does not have, a name taken) is left out, as a problem."""
        if self.is_registered(plugin):
            return  # (a module registered in code that is also installed: there already)
        shown = name or _name_of(plugin)
        if name is not None and self.get_plugin(name) is not None:
            taken = f"{name} ({self.origins[name]})" if name in self.origins else name
            self.problems.append(
                PluginProblem(shown, where, f"its name is taken by plugin {taken}; skipped")
            )
            return
        try:
            registered = self.register(plugin, name=name)
        except Exception as exc:
            if self.is_registered(plugin):  # (an older pluggy may register part of it)
                self.unregister(plugin)
            self.problems.append(
                PluginProblem(shown, where, f"cannot be registered ({_said(exc)}); skipped")
            )
            return
        if registered is not None:
            self.origins[registered] = where


_IN_CODE: list[tuple[object, str | None]] = []  # plugins registered with register_plugin


def make_plugin_manager(*, load_entry_points: bool = True) -> PluginManager:
    """A plugin manager with the built-ins, every installed ``agentdebug`` plugin
    and those registered in code (:func:`register_plugin`). A plugin that cannot be
    loaded is left out and kept in ``problems``."""
    from agentdebug import builtin

    pm = PluginManager()
    pm.add_hookspecs(HookSpecs)
    pm.register(builtin, name=BUILTIN)
    pm.origins[BUILTIN] = "agentdebug-core"
    if load_entry_points:
        _load_installed(pm)
        for plugin, name in list(_IN_CODE):
            pm.add(plugin, name, "registered in code")
    return pm


def _load_installed(pm: PluginManager) -> None:
    """Every entry point in group ``agentdebug``, each loaded on its own (pluggy's
    ``load_setuptools_entrypoints`` for all of them stops at the first that fails)."""
    try:
        found = list(importlib.metadata.entry_points(group=PROJECT))
    except Exception as exc:  # (a distribution's metadata unreadable)
        log.warning("the installed agentdebug plugins cannot be listed (%s); none loaded", exc)
        return
    for ep in found:
        if pm.has_plugin(ep.name) or pm.is_blocked(ep.name):
            continue
        where = _distribution(ep)
        pm.origins[ep.name] = where
        try:
            pm.load_setuptools_entrypoints(PROJECT, name=ep.name)
        except (Exception, SystemExit) as exc:  # (its module raised while imported)
            plugin = pm.get_plugin(ep.name)
            if plugin is not None:  # (an older pluggy may register part of it)
                pm.unregister(plugin)
            pm.problems.append(
                PluginProblem(ep.name, where, f"cannot be loaded ({_said(exc)}); skipped")
            )


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    try:
        name = dist.metadata["Name"] if dist is not None else None
        version = dist.version if dist is not None else None
    except Exception:  # (metadata a broken install left unreadable)
        name = version = None
    if not name:
        return f"module {ep.value}"
    return f"{name} {version}" if version else str(name)


def _name_of(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    return name if isinstance(name, str) else type(plugin).__name__


def _said(exc: BaseException) -> str:
    """An exception as one short line: its type and message."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:299] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Add a plugin (an object or module with ``@hookimpl`` methods) to this process
    without packaging it: the registry is rebuilt with it, and so after every
    :func:`reset_registry`. Registering one again is a no-op."""
    if any(p is plugin for p, _ in _IN_CODE):
        return
    _IN_CODE.append((plugin, name))
    reset_registry()


@dataclass(frozen=True)
class _Kind:
    """One kind of contribution: its hook, the registry table it fills, its key."""

    hook: str
    table: str
    noun: str
    key: str  # the attribute naming it
    methods: tuple[str, ...]

    @property
    def plural(self) -> str:
        return self.table.replace("_", " ")


KINDS = (
    _Kind("agentdebug_failure_modes", "failure_modes", "failure mode", "id", ()),
    _Kind("agentdebug_detectors", "detectors", "detector", "name", ("detect",)),
    _Kind("agentdebug_attributors", "attributors", "attributor", "name", ("attribute",)),
    _Kind("agentdebug_importers", "importers", "importer", "name", ("sniff", "load")),
    _Kind("agentdebug_recoverers", "recoverers", "recoverer", "name", ("recover",)),
    _Kind(
        "agentdebug_rerun_executors", "rerun_executors", "rerun executor", "framework", ("rerun",)
    ),
)


@dataclass
class Registry:
    """What the installed plugins contribute, by name; ``added_by`` says which
    plugin added each (table name -> key -> plugin name), ``problems`` what was
    wrong with a plugin (also in ``warnings``, with the other warnings)."""

    failure_modes: dict[str, FailureMode] = field(default_factory=dict)
    detectors: dict[str, Detector] = field(default_factory=dict)
    attributors: dict[str, Attributor] = field(default_factory=dict)
    importers: dict[str, Importer] = field(default_factory=dict)
    recoverers: dict[str, Recoverer] = field(default_factory=dict)
    rerun_executors: dict[str, RerunExecutor] = field(default_factory=dict)
    plugin_manager: pluggy.PluginManager | None = None
    warnings: list[str] = field(default_factory=list)
    problems: list[PluginProblem] = field(default_factory=list)
    added_by: dict[str, dict[str, str]] = field(default_factory=dict)
    _report_failed: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def from_plugin_manager(cls, pm: pluggy.PluginManager) -> Registry:
        reg = cls(plugin_manager=pm)
        for problem in getattr(pm, "problems", ()):
            reg._problem(problem)
        for kind in KINDS:
            impls = getattr(pm.hook, kind.hook).get_hookimpls()
            # the built-ins first (they win name clashes and keep their order),
            # then the plugins in registration order
            for impl in sorted(impls, key=lambda i: i.plugin_name != BUILTIN):
                for item in reg._items(impl, kind):
                    reg._take(kind, item, impl.plugin_name)
        return reg

    def _items(self, impl: Any, kind: _Kind) -> list[Any]:
        """What one plugin's implementation of ``kind``'s hook gives that the hook
        takes; the rest is a problem of that plugin."""
        plugin = impl.plugin_name
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            self._problem(self._of(plugin, f"{kind.hook} is a hook wrapper; ignored", kind.hook))
            return []
        try:
            returned = impl.function()
            items = _as_list(returned)
        except Exception as exc:
            if plugin == BUILTIN:
                raise  # (agentdebug's own bug: a traceback is right)
            why = f"{kind.hook} raised {_said(exc)}; its {kind.plural} are skipped"
            self._problem(self._of(plugin, why, kind.hook))
            return []
        if items is None:
            wrap = " (wrap it in a list)" if _refused(kind, returned) is None else ""
            why = f"{kind.hook} returned {_describe(returned)}, not a list{wrap}; its {kind.plural} are skipped"
            self._problem(self._of(plugin, why, kind.hook))
            return []
        kept = []
        for item in items:
            refused = _refused(kind, item)
            if refused is None:
                kept.append(item)
                continue
            why = f"{kind.hook} gave {_describe(item)}, {refused}; skipped"
            self._problem(self._of(plugin, why, kind.hook))
        return kept

    def _take(self, kind: _Kind, item: Any, plugin: str) -> None:
        key = getattr(item, kind.key)
        table: dict[str, Any] = getattr(self, kind.table)
        owners = self.added_by.setdefault(kind.table, {})
        if key not in table:
            table[key] = item
            owners[key] = plugin
            return
        first = owners[key]
        if first == plugin:
            why = f"{kind.noun} '{key}' is given twice; keeping the first"
        else:
            why = f"{kind.noun} '{key}' is already registered by {self.label(first)}; keeping that one"
        self._problem(self._of(plugin, why, kind.hook, broken=False))

    def _of(
        self, plugin: str, reason: str, hook: str | None, *, broken: bool = True
    ) -> PluginProblem:
        return PluginProblem(self._shown(plugin), self._where(plugin), reason, hook, broken)

    def _problem(self, problem: PluginProblem) -> None:
        self.problems.append(problem)
        self.warnings.append(str(problem))
        log.warning("%s", problem)

    def _where(self, plugin: str) -> str | None:
        return getattr(self.plugin_manager, "origins", {}).get(plugin)

    def _shown(self, plugin: str) -> str:
        """A plugin's name as a user knows it (one registered without a name: its
        class's or module's, not the number pluggy gave it)."""
        pm = self.plugin_manager
        found = pm.get_plugin(plugin) if pm is not None and plugin.isdigit() else None
        return plugin if found is None else _name_of(found)

    def label(self, plugin: str) -> str:
        """How a message names a plugin: "plugin 'x' (its-distribution 1.0)"."""
        if plugin == BUILTIN:
            return "the built-ins (agentdebug-core)"
        return PluginProblem(self._shown(plugin), self._where(plugin), "").who

    def plugins(self) -> list[tuple[str, str | None]]:
        """Each plugin (its name, and its distribution or how it came), in the order
        they were registered, with those that could not be loaded or registered."""
        pm = self.plugin_manager
        origins: dict[str, str] = getattr(pm, "origins", {})
        seen: dict[tuple[str, str | None], None] = {
            (self._shown(name), where): None for name, where in origins.items()
        }
        for name, plugin in pm.list_name_plugin() if pm is not None else ():
            if plugin is not None and name not in origins:  # (None: a name blocked)
                seen[(self._shown(name), None)] = None
        for problem in self.problems:
            seen.setdefault((problem.plugin, problem.where), None)
        return list(seen)

    def added(self, plugin: str) -> list[tuple[str, list[str]]]:
        """What ``plugin`` (as :meth:`plugins` names it) added, kind by kind."""
        out = []
        for kind in KINDS:
            owners = self.added_by.get(kind.table, {})
            keys = [key for key, by in owners.items() if self._shown(by) == plugin]
            if keys:
                out.append((kind.plural, keys))
        return out

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

    def debugging_hints(self, trajectory: AgentTrajectory) -> tuple[list[str], list[str]]:
        """Each plugin's ``agentdebug_debugging_hints`` for ``trajectory``, called on
        its own: the hints (texts), and what went wrong, in words naming the plugin
        (one that raises, or answers with something other than a list of texts, is
        left out; the others' hints are kept)."""
        hints: list[str] = []
        problems: list[str] = []
        if self.plugin_manager is None:
            return hints, problems
        for impl in self.plugin_manager.hook.agentdebug_debugging_hints.get_hookimpls():
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                continue
            label = self.label(impl.plugin_name)
            try:
                args = {"trajectory": trajectory}  # (only what the hook declares)
                given = _as_list(impl.function(*(args[a] for a in impl.argnames)))
            except Exception as exc:  # a plugin's bug must not cost the diagnosis
                problems.append(f"{label}: agentdebug_debugging_hints failed ({_said(exc)})")
                log.debug("the traceback", exc_info=True)
                continue
            if given is None:
                problems.append(f"{label}: agentdebug_debugging_hints returned no list of texts")
                continue
            hints += [h for h in given if isinstance(h, str) and h.strip()]
        return hints, problems

    def notify_report(self, report: DiagnosticReport, trajectory: AgentTrajectory) -> None:
        """Each plugin's ``agentdebug_on_report`` with the finished report, on its
        own: one that raises is logged, naming the plugin (a warning the first time,
        later at debug level), and the others still run."""
        if self.plugin_manager is None:
            return
        given = {"report": report, "trajectory": trajectory}
        for impl in self.plugin_manager.hook.agentdebug_on_report.get_hookimpls():
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                continue
            try:
                impl.function(*(given[arg] for arg in impl.argnames))
            except Exception as exc:  # a plugin's bug must not fail the diagnosis
                plugin = impl.plugin_name
                said = f"{self.label(plugin)}: agentdebug_on_report failed ({_said(exc)})"
                if plugin in self._report_failed:
                    log.debug("%s", said, exc_info=True)
                    continue
                self._report_failed.add(plugin)
                log.warning("%s; the other plugins' hooks still run", said)
                log.debug("the traceback", exc_info=True)


def _as_list(returned: object) -> list[Any] | None:
    """A hook's answer as a list; None when it is no list (nothing is an empty one)."""
    if returned is None:
        return []
    if isinstance(returned, list | tuple | types.GeneratorType):
        return list(returned)
    return None


def _attr(item: object, name: str) -> Any:
    try:
        return getattr(item, name, None)
    except Exception:  # (a property that raises)
        return None


def _refused(kind: _Kind, item: object) -> str | None:
    """Why ``item`` is not what ``kind``'s hook takes; None when it is."""
    if kind.table == "failure_modes":
        return None if isinstance(item, FailureMode) else "not a FailureMode"
    key = _attr(item, kind.key)
    if not isinstance(key, str) or not key.strip():
        return f"which has no '{kind.key}' (a non-empty str)"
    for method in kind.methods:
        if not callable(_attr(item, method)):
            return f"which has no {method}() method"
    return None


def _describe(item: object) -> str:
    if isinstance(item, str):
        text = item if len(item) <= 60 else item[:59] + "…"
        return f"{text!r} (a str)"
    name = type(item).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


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
