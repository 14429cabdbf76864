"""Finding the rerun executor for a run: by framework name through the plugins,
or from a ``module:factory`` spec the user gives."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.plugins import Registry, get_registry
from agentdebug.stages import RerunExecutor


def find_executor(framework: str | None, registry: Registry | None = None) -> RerunExecutor:
    """The installed executor for ``framework`` (entry-point group ``agentdebug``)."""
    reg = registry or get_registry()
    if framework and framework in reg.rerun_executors:
        return reg.rerun_executors[framework]
    known = ", ".join(sorted(reg.rerun_executors))
    known = f"installed: {known}" if known else "none is installed"
    what = f"framework '{framework}'" if framework else "a run with no framework"
    plugin = PLUGINS.get(framework or "")
    how = (
        f"install {plugin} where this agentdebug runs (from agentdebug's checkout: "
        f"`pip install ./packages/{plugin}`, or `python3 dev.py run {plugin} -m "
        "agentdebug ...`)"
        if plugin
        else "install the framework's agentdebug plugin"
    )
    raise NotFoundError(
        f"no rerun executor for {what} ({known}); {how}, or pass --executor module:factory"
    )


# The distributions whose plugins rerun each framework's runs (named in the error
# when one is missing from the environment the command runs in).
PLUGINS = {"react": "agentdebug-react", "langgraph": "agentdebug-langgraph"}


def load_executor(spec: str, *args: Any, **options: Any) -> RerunExecutor:
    """The executor built by ``module:factory`` (a class or a function returning
    one), called with ``args`` and keyword ``options`` (the CLI's
    ``--executor-option KEY=VALUE``, as strings)."""
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
        if callable(target):
            executor = target(*args, **options)
        elif options:
            raise AgentDebugError(
                f"executor '{spec}' is an object, not a factory, so it takes no options "
                f"(given: {', '.join(sorted(options))})"
            )
        else:
            executor = target
    except AgentDebugError:
        raise
    except Exception as exc:
        if options and isinstance(exc, TypeError):  # (most often an option it does not take)
            raise AgentDebugError(
                f"executor '{spec}': the factory does not take the options given "
                f"({', '.join(sorted(options))}): {exc}"
            ) from exc
        raise AgentDebugError(
            f"executor '{spec}': the factory failed ({type(exc).__name__}: {exc})"
        ) from exc
    if not isinstance(executor, RerunExecutor):
        raise AgentDebugError(
            f"executor '{spec}' returned {type(executor).__name__}, which has no "
            "'framework' attribute and 'rerun(request)' method"
        )
    return executor


def configure_executor(executor: RerunExecutor, options: dict[str, str]) -> RerunExecutor:
    """``executor`` configured by ``options`` (the CLI's ``--executor-option
    KEY=VALUE``), through its optional ``with_options(options)``, which returns a
    configured executor and raises an ``AgentDebugError`` naming an option it does
    not take or a value it cannot use. No options: ``executor`` as it is."""
    if not options:
        return executor
    configure = getattr(executor, "with_options", None)
    if configure is None:
        raise AgentDebugError(
            f"the rerun executor for '{executor.framework}' ({type(executor).__name__}) "
            f"takes no options (given: {', '.join(sorted(options))})"
        )
    configured = configure(dict(options))
    if not isinstance(configured, RerunExecutor):
        raise AgentDebugError(
            f"the rerun executor for '{executor.framework}' returned "
            f"{type(configured).__name__} from with_options, not an executor"
        )
    return configured


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; a pair without ``=`` or key, or a key given
    twice, is an error naming it."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise AgentDebugError(f"executor option '{pair}': expected KEY=VALUE")
        if key in options:
            raise AgentDebugError(f"executor option '{key}' given twice")
        options[key] = value
    return options
