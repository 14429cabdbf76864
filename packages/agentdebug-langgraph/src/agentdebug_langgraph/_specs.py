"""Functions named so that another process can find them again: the graph factory
and the success check a run records (``module:qualname``), and how one is named
in messages when it cannot be."""

from __future__ import annotations

from typing import Any


def factory_spec(factory: Any) -> str | None:
    """``graph_factory`` as the ``module:function`` a rerun imports: given so, or a
    top-level function of an importable module; anything else is refused now,
    not when a rerun in another process first needs it."""
    if factory is None:
        return None
    if isinstance(factory, str):
        module, sep, attr = factory.partition(":")
        if sep and module.strip() and attr.strip():
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
