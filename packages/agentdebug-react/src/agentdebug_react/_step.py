"""The objects a ReAct loop passes around: what a step did, what it sees, how a run ended.

A hand-written ReAct loop is a step function called until it answers. The step
function receives a :class:`StepContext` (the message list the model reads, the
user's own state, the step number and, on a rerun, the directive) and returns a
:class:`Step` saying what it thought, which tool it called with what input, what
came back, or its final answer. Capture, checkpoints and rerun all work from
these two objects, so the step function is the only thing a user writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agentdebug.schema import AgentTrajectory, DiagnosticReport

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

#: The framework name on every trajectory, checkpoint and executor of this package.
FRAMEWORK = "react"
#: The agent name used when the user gives none.
DEFAULT_AGENT = "agent"

S = TypeVar("S")

Message = dict[str, Any]


@dataclass
class ToolCall:
    """One of several tool calls a step made at once (a model's parallel tool calls).

    ``name`` is the tool, ``input`` its arguments as the model gave them,
    ``observation`` what came back (or what the model was shown about the
    failure), ``error`` the failure, ``id`` the model's id for the call (an
    OpenAI ``tool_call_id``), kept so results and calls stay paired.
    """

    name: str
    input: Any = None
    observation: Any = None
    error: BaseException | str | None = None
    id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"ToolCall.name must be a tool's name, got {self.name!r}")
        if self.id is not None and not isinstance(self.id, str):
            raise ValueError(f"ToolCall.id must be a string or None, got {self.id!r}")
        if not isinstance(self.metadata, dict):
            raise ValueError(
                f"ToolCall.metadata must be a dict, got {type(self.metadata).__name__}"
            )


@dataclass
class Step:
    """What one iteration of the loop did.

    ``error`` marks the action as failed (a tool that raised, an unknown tool, a
    reply that could not be parsed); ``observation`` is then what the model was
    shown about the failure. A step is final when it carries a final answer (or
    ``done`` is set, for a final answer that is legitimately ``None``).

    A step whose model asked for several tools at once gives them as ``calls``
    (:class:`ToolCall` objects, or mappings of their fields) instead of
    ``action``: each is recorded as its own call and result, so a diagnosis can
    blame the one that failed. ``observation`` and ``error`` then belong to the
    step (a reply that could not be parsed), not to a call.
    """

    thought: str | None = None
    action: str | None = None
    action_input: Any = None
    observation: Any = None
    final_answer: Any = None
    error: BaseException | str | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.calls is None:  # (``calls=reply.get("calls")`` for a reply with none)
            self.calls = []
        if not isinstance(self.calls, (list, tuple)):
            raise ValueError(
                f"Step.calls must be a list of ToolCall, got {type(self.calls).__name__}"
            )
        if not self.calls:
            return
        if self.action is not None:
            raise ValueError(
                "a Step takes either action= (one tool call) or calls= (several), not both; "
                "give the action as the first of the calls"
            )
        calls = []
        for i, call in enumerate(self.calls):
            if isinstance(call, Mapping):
                try:
                    call = ToolCall(**call)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"Step.calls[{i}]: {exc}") from None
            elif not isinstance(call, ToolCall):
                raise ValueError(
                    f"Step.calls[{i}] must be a ToolCall or a mapping, got {type(call).__name__}"
                )
            calls.append(call)
        self.calls = calls

    @property
    def is_final(self) -> bool:
        return self.done or self.final_answer is not None

    @classmethod
    def finish(cls, answer: Any, *, thought: str | None = None) -> Step:
        """A final step: the loop stops and ``answer`` is the run's answer."""
        return cls(thought=thought, final_answer=answer, done=True)


@dataclass
class StepContext(Generic[S]):
    """What the step function sees, and may change in place.

    ``messages`` is the conversation the model reads; append to it (the assistant's
    reply, the observation) as a hand-written loop does. ``state`` is the user's
    own state; mutate it or assign a new value. Both are checkpointed before every
    step. ``directive`` is set on a rerun: the correction the diagnosis proposed
    (it is also in ``messages``, where the model sees it).
    """

    messages: list[Message]
    state: S
    step: int
    goal: str | None
    run_id: str
    directive: str | None = None
    state_patch: dict[str, Any] | None = None


StepFunction = Callable[[StepContext[S]], Step]
AsyncStepFunction = Callable[[StepContext[S]], Awaitable[Step]]


@dataclass
class ReactResult(Generic[S]):
    """How one run of the loop ended.

    ``answered`` says whether the loop gave a final answer at all (it may also have
    stopped at its step limit or raised). ``ok`` is the user's success check (or the reference answer) on the final
    answer: ``None`` when there was nothing to check against. ``report`` is the
    automatic diagnosis when the run failed (None when it passed, or when
    diagnosis was turned off or failed).
    """

    run_id: str
    answer: Any
    answered: bool
    ok: bool | None
    steps: int
    messages: list[Message]
    state: S
    reason: str | None = None
    report: DiagnosticReport | None = None
    _session: TraceSession | None = field(default=None, repr=False, compare=False)

    def trajectory(self) -> AgentTrajectory:
        """The run as recorded (read back from the store)."""
        if self._session is None:
            raise RuntimeError(f"run {self.run_id} was not recorded")
        return self._session.trajectory()
