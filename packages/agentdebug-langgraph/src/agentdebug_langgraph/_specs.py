"""Functions named so that another process can find them again: the graph factory
and the success check a run records (``module:qualname``), and how one is named
in messages when it cannot be."""

from __future__ import annotations

import importlib
from typing import Any

from agentdebug.errors import AgentDebugError


def factory_spec(factory: Any) -> str | None:
    """``graph_factory`` as the ``module:function`` a rerun imports: given so, or a
    top-level function of an importable module; anything else is refused now,
    not when a rerun in another process first needs it."""
    if factory is None:
        return None
    if isinstance(factory, str):
        if split_spec(factory) is not None:
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
