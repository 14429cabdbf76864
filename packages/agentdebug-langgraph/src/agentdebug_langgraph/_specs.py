"""Functions named so that another process can find them again: the graph factory
and the success check a run records (``module:qualname``), and how one is named
in messages when it cannot be."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from typing import Any

from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory


def factory_spec(factory: Any) -> str | None:
    """``graph_factory`` as the ``module:function`` a rerun imports: given so, or a
    top-level function of an importable module; anything else is refused now,
    not when a rerun in another process first needs it."""
    if factory is None:
        return None
    if isinstance(factory, str):
        parts = split_spec(factory)
        if parts is not None:
            problem = _unfindable(*parts)
            if problem:
                raise ValueError(
                    f"AgentDebugCallback(graph_factory={factory!r}): {problem}, so a rerun "
                    "could not rebuild the graph"
                )
            return factory
        raise ValueError(
            f"AgentDebugCallback(graph_factory={factory!r}): expected 'module:function' "
            "(a function returning the compiled graph), e.g. 'myapp.graphs:build_graph'"
        )
    if callable(factory):
        spec = spec_of(factory)
        if spec:
            return spec
        raise ValueError(
            f"AgentDebugCallback(graph_factory={name_of(factory)}): a rerun in another "
            "process imports the factory by name, so it must be a top-level function of "
            "an importable module (not a lambda, a nested function or one defined in the "
            "script run as __main__); or give 'module:function'"
        )
    raise TypeError(
        "AgentDebugCallback(graph_factory=...) takes 'module:function' or a function, "
        f"not {type(factory).__name__}"
    )


def _unfindable(module_name: str, attr: str) -> str | None:
    """Why ``module:attr`` names nothing, as far as can be told without running any
    of the user's code: a module imported already that has no such function (a
    typo), or a top-level package found neither on ``sys.path`` nor in the current
    folder (where ``agentdebug act`` looks too). Nothing is imported here (a
    package's ``__init__`` may do work), and a module still being imported (the
    callback made at its top, above the function) is not looked into."""
    try:
        module = sys.modules.get(module_name)
        if module is None:
            top = module_name.partition(".")[0]
            if top in sys.modules or importlib.machinery.PathFinder.find_spec(
                top, [*sys.path, os.getcwd()]
            ):
                return None
            if importlib.util.find_spec(top) is not None:  # (a built-in, a frozen module)
                return None
            return f"no module {top} is found on sys.path or in {os.getcwd()}"
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            return None
        target: Any = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                return f"{module_name} has no '{attr}'"
        return None if callable(target) else f"{module_name}:{attr} is not a function"
    except Exception:  # (an odd finder or module: the rerun will say, not the capture)
        return None


def name_of(func: Any) -> str:
    """How a function is named in messages: ``module:qualname`` as far as known."""
    module = getattr(func, "__module__", None) or "?"
    qual = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}:{qual}"


def spec_of(func: Any) -> str | None:
    """``module:qualname`` of a importable top-level function, to find it again later."""
    if func is None:
        return None
    module = getattr(func, "__module__", None)
    qual = getattr(func, "__qualname__", None)
    if not module or not qual or "<" in qual or module == "__main__":
        return None
    return f"{module}:{qual}"


def split_spec(spec: str) -> tuple[str, str] | None:
    """``(module, qualname)`` of a ``module:qualname``, or None if it is not one."""
    module, sep, attr = spec.partition(":")
    return (module.strip(), attr.strip()) if sep and module.strip() and attr.strip() else None


def load_spec(spec: str, what: str) -> Any:
    """The function ``module:qualname`` names, imported; ``what`` it is, for the
    error that says why it cannot be."""
    parts = split_spec(spec)
    if parts is None:
        raise AgentDebugError(f"{what} '{spec}': expected module:function")
    module_name, attr = parts
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentDebugError(f"{what} '{spec}': cannot import {module_name}: {exc}") from None
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise AgentDebugError(f"{what} '{spec}': {module_name} has no '{attr}'")
    return target


UNJUDGED = "the branch's outcome is left unknown"
PASS_CHECK = (
    f"{UNJUDGED}: pass LangGraphRerunExecutor(success_check=...) "
    "(on the command line: --executor-option success_check=module:function), or define "
    "the check at the top level of an importable module"
)


def recorded_check(trajectory: AgentTrajectory) -> Any:
    """The check that judged ``trajectory`` (alive in this process, or imported by
    its recorded name), to judge its branch; an ``UnavailableCheck`` saying why when
    it can be neither (judged without it, a branch would pass for want of a check);
    None when the run had none."""
    from agentdebug_langgraph._ending import UnavailableCheck, checked_success_check
    from agentdebug_langgraph._live import live_check

    for run_id in (trajectory.id, trajectory.parent_id):
        check = live_check(run_id) if run_id else None
        if check is not None:
            return check
    lg = trajectory.metadata.get("langgraph")
    lg = lg if isinstance(lg, dict) else {}
    spec = lg.get("success_check")
    if isinstance(spec, str) and spec:
        try:
            check = checked_success_check(
                load_spec(spec, "success check"), f"the run's success check '{spec}'"
            )
        except (AgentDebugError, TypeError) as exc:  # (gone, or now an async one)
            return UnavailableCheck(f"{exc}; {PASS_CHECK}")
        return check
    name = lg.get("success_check_unimportable")
    if isinstance(name, str) and name:
        return UnavailableCheck(
            f"run '{trajectory.id}' was judged by success check '{name}', which has no "
            "importable name (a function defined in the script run as __main__, a "
            f"lambda or a nested function) and is not alive in this process; {PASS_CHECK}"
        )
    return None


def checked_update(update: Any) -> Any:
    """A ``directive_update(request, snapshot)`` as given, refused now if it cannot
    be one (a class, a coroutine function, one that does not take those two), not
    after the gate approved the rerun."""
    if update is None:
        return None
    what = f"directive_update {_name(update)}"
    if inspect.isclass(update) or not callable(update):
        raise AgentDebugError(f"{what} is not a function of (request, snapshot)")
    if any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
        for f in (update, getattr(update, "__call__", None))  # noqa: B004
    ):
        raise AgentDebugError(f"{what} is a coroutine function; the fork needs its update at once")
    try:
        inspect.signature(update).bind(None, None)
    except TypeError as exc:
        raise AgentDebugError(f"{what} does not take (request, snapshot): {exc}") from None
    except ValueError:  # (a builtin without a signature: called as given)
        pass
    return update


def updated(update: Any, request: Any, snap: Any, graph: Any) -> dict[str, Any]:
    """What ``update`` gives for the fork: a dict of the state's keys, else an error
    saying what it gave."""
    from agentdebug_langgraph._fork import require_state_keys

    name = _name(update)
    try:
        values = update(request, snap)
    except Exception as exc:  # (your code's error, named: not a traceback of ours)
        raise AgentDebugError(
            f"directive_update {name} raised {type(exc).__name__}: {exc}"
        ) from exc
    if inspect.iscoroutine(values):
        values.close()  # (never awaited: closed, not left to warn)
        raise AgentDebugError(
            f"directive_update {name} returned a coroutine: the fork needs its update "
            "at once (a function that returns the dict, not an async one)"
        )
    if not isinstance(values, dict):
        raise AgentDebugError(
            f"directive_update {name} returned {type(values).__name__}, not a dict of the "
            "state's keys to update"
        )
    require_state_keys(graph, values, request.trajectory.id, f"what directive_update {name} gave")
    return values


def _name(function: Any) -> str:
    """How a function is named in a message: its qualified name, else (a partial, a
    callable object) its type's."""
    name = getattr(function, "__qualname__", None)
    return name if isinstance(name, str) else f"({type(function).__name__})"
