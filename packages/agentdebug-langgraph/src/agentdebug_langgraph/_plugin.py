"""The entry point core loads (group ``agentdebug``): registers the LangGraph rerun
executor. It must not import LangGraph (core loads every plugin when it builds its
registry, and LangGraph takes seconds to import), so the registered object is a
light stand-in that builds the real executor on first use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentdebug.errors import AgentDebugError
from agentdebug.plugins import hookimpl
from agentdebug.schema import AgentTrajectory, RecoveryPlan, RerunRequest

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _flag(key: str, value: str) -> bool:
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise AgentDebugError(
        f"executor option {key}={value!r}: expected true or false "
        f"({', '.join(_TRUE[1:])}; {', '.join(_FALSE[1:])} read so too)"
    )


def _asynchronous(key: str, value: str) -> bool | None:
    """``auto`` (as the run was made), else a flag."""
    if value.strip().lower() == "auto":
        return None
    try:
        return _flag(key, value)
    except AgentDebugError:
        raise AgentDebugError(
            f"executor option {key}={value!r}: expected true, false or auto"
        ) from None


def _policy(key: str, value: str) -> str:
    from agentdebug_langgraph._replay import REPLAY_POLICIES

    if value.strip() not in REPLAY_POLICIES:
        raise AgentDebugError(
            f"executor option {key}={value!r}: expected one of " + ", ".join(REPLAY_POLICIES)
        )
    return value.strip()


def _key(key: str, value: str) -> str:
    if not value.strip():
        raise AgentDebugError(f"executor option {key}: expected a state key, got nothing")
    return value.strip()


def _function(key: str, value: str) -> Any:
    """A function by its ``module:function`` name (a success check, a
    ``directive_update``), imported now."""
    from agentdebug_langgraph._specs import load_spec

    found = load_spec(value.strip(), f"executor option {key}:")
    if not callable(found):
        raise AgentDebugError(
            f"executor option {key} '{value.strip()}': {type(found).__name__} is not a function"
        )
    return found


def _update(key: str, value: str) -> Any:
    """A ``directive_update`` by its ``module:function`` name, imported and checked."""
    from agentdebug_langgraph._specs import checked_update

    return checked_update(_function(key, value))


def _limit(key: str, value: str) -> int:
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if limit < 1:
        raise AgentDebugError(f"executor option {key}={value!r}: expected a whole number >= 1")
    return limit


# what ``--executor-option KEY=VALUE`` may set, and how its text is read
OPTIONS: dict[str, Callable[[str, str], Any]] = {
    "replay_answers": _policy,
    "isolate": _flag,
    "asynchronous": _asynchronous,
    "directive_key": _key,
    "recursion_limit": _limit,
    "success_check": _function,
    "directive_update": _update,
}


class RegisteredExecutor:
    """``LangGraphRerunExecutor()`` for stored runs, created when first needed: it
    finds the graph that made the run in this process, or rebuilds it from the
    run's recorded ``graph_factory``, and refuses with a clear error otherwise.
    :meth:`with_options` makes one configured by the CLI's ``--executor-option``."""

    framework = "langgraph"

    def __init__(self, executor: Any = None) -> None:
        self._executor: Any = executor

    def _built(self) -> Any:
        if self._executor is None:
            from agentdebug_langgraph._executor import LangGraphRerunExecutor

            self._executor = LangGraphRerunExecutor()
        return self._executor

    def preflight(
        self,
        trajectory: AgentTrajectory,
        *,
        scorer: str | None = None,
        resume_step: int | None = None,
    ) -> None:
        """The executor's checks before the gate (see ``LangGraphRerunExecutor.preflight``)."""
        self._built().preflight(trajectory, scorer=scorer, resume_step=resume_step)

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        result: AgentTrajectory = self._built().rerun(request)
        return result

    def plan_notes(self, trajectory: AgentTrajectory, plan: RecoveryPlan) -> list[str]:
        """For the gate: the answers the branch will be given on a person's behalf
        (see ``LangGraphRerunExecutor.plan_notes``)."""
        notes: list[str] = self._built().plan_notes(trajectory, plan)
        return notes

    def with_options(self, options: dict[str, str]) -> RegisteredExecutor:
        """An executor built with ``options`` (text, as the CLI takes them): the
        keys of :data:`OPTIONS`; an unknown key or a bad value is an error naming it."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise AgentDebugError(
                f"the LangGraph rerun executor takes no option {', '.join(unknown)} "
                f"(it takes: {', '.join(OPTIONS)})"
            )
        kwargs = {key: OPTIONS[key](key, value) for key, value in options.items()}
        limit = kwargs.pop("recursion_limit", None)
        if limit is not None:
            kwargs["config"] = {"recursion_limit": limit}
        from agentdebug_langgraph._executor import LangGraphRerunExecutor

        return RegisteredExecutor(LangGraphRerunExecutor(**kwargs))


@hookimpl
def agentdebug_rerun_executors() -> Sequence[Any]:
    return [RegisteredExecutor()]
