"""The objects a ReAct loop passes around: what a step did, what it sees, how a run ended.

A hand-written ReAct loop is a step function called until it answers. The step
function receives a :class:`StepContext` (the message list the model reads, the
user's own state, the step number and, on a rerun, the directive) and returns a
:class:`Step` saying what it thought, which tool it called with what input, what
came back, or its final answer. Capture, checkpoints and rerun all work from
these two objects, so the step function is the only thing a user writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
class Step:
    """What one iteration of the loop did.

    ``error`` marks the action as failed (a tool that raised, an unknown tool, a
    reply that could not be parsed); ``observation`` is then what the model was
    shown about the failure. A step is final when it carries a final answer (or
    ``done`` is set, for a final answer that is legitimately ``None``).
    """

    thought: str | None = None
    action: str | None = None
    action_input: Any = None
    observation: Any = None
    final_answer: Any = None
    error: BaseException | str | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

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
