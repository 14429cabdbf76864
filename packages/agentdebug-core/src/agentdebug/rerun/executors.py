"""Finding the rerun executor for a run: by framework name through the plugins,
or from a ``module:factory`` spec the user gives."""

from __future__ import annotations

import importlib
from typing import Any

from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.plugins import Registry, get_registry
from agentdebug.stages import RerunExecutor


def find_executor(framework: str | None, registry: Registry | None = None) -> RerunExecutor:
    """The installed executor for ``framework`` (entry-point group ``agentdebug``)."""
    reg = registry or get_registry()
    if framework and framework in reg.rerun_executors:
        return reg.rerun_executors[framework]
    known = ", ".join(sorted(reg.rerun_executors)) or "none installed"
    what = f"framework '{framework}'" if framework else "a run with no framework"
    raise NotFoundError(
        f"no rerun executor for {what} (installed: {known}); install the framework's "
        "agentdebug plugin or pass --executor module:factory"
    )


def load_executor(spec: str, *args: Any) -> RerunExecutor:
    """The executor built by ``module:factory`` (a class or a function returning one)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentDebugError(f"executor '{spec}': expected module:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentDebugError(f"executor '{spec}': cannot import {module_name}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing
        raise AgentDebugError(
            f"executor '{spec}': importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise AgentDebugError(f"executor '{spec}': {module_name} has no '{attr}'")
    try:
        executor = target(*args) if callable(target) else target
    except Exception as exc:
        raise AgentDebugError(
            f"executor '{spec}': the factory failed ({type(exc).__name__}: {exc})"
        ) from exc
    if not isinstance(executor, RerunExecutor):
        raise AgentDebugError(
            f"executor '{spec}' returned {type(executor).__name__}, which has no "
            "'framework' attribute and 'rerun(request)' method"
        )
    return executor
