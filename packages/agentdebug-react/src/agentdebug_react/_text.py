"""A ready-made step function for the classic text ReAct loop.

Most hand-written ReAct loops do the same four things per iteration: ask the
model, parse its Thought/Action/Action Input (or Final Answer), call the tool,
append the observation. :class:`TextStep` is that iteration, so a loop is a model
function and a tool table; write your own step function when yours differs.

Failures a model can recover from are observations, as in every ReAct loop: a
tool that raises, an unknown tool, a reply that cannot be parsed. The model is
told what went wrong and the step is recorded with the error, so the rule pack
sees it; nothing is raised into the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from agentdebug_react._parse import TranscriptError, parse_reply
from agentdebug_react._step import Message, Step, StepContext

Model = Callable[[list[Message]], str]
Tool = Callable[[Any], Any]

FORMAT_REMINDER = (
    "Reply with 'Thought:' then either 'Action:' and 'Action Input:' or 'Final Answer:'."
)


def observation_text(value: Any) -> str:
    """How an observation is shown to the model: strings as they are, data as JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


class TextStep:
    """``step(ctx)`` for a text ReAct loop: ``model(messages) -> reply``, then the tool.

    The reply is appended as an assistant message and the observation as a user
    message ``"Observation: ..."`` (override :meth:`observation_message` for
    another layout). A tool receives the parsed Action Input as one argument.
    """

    def __init__(self, model: Model, tools: Mapping[str, Tool]) -> None:
        self.model = model
        self.tools = dict(tools)

    @property
    def tool_names(self) -> Sequence[str]:
        return list(self.tools)

    def observation_message(self, text: str) -> Message:
        return {"role": "user", "content": f"Observation: {text}"}

    def __call__(self, ctx: StepContext[Any]) -> Step:
        reply = self.model(ctx.messages)
        if not isinstance(reply, str):
            raise TypeError(f"the model must return the reply text, got {type(reply).__name__}")
        ctx.messages.append({"role": "assistant", "content": reply})
        try:
            step = parse_reply(reply)
        except TranscriptError as exc:
            return self._observe(
                ctx,
                Step(thought=reply.strip() or None),
                f"Error: your reply could not be parsed ({exc}). {FORMAT_REMINDER}",
                error=f"unparseable reply: {exc}",
            )
        if step.is_final:
            return step
        if step.action is None:
            return self._observe(
                ctx,
                step,
                f"Error: no Action or Final Answer in your reply. {FORMAT_REMINDER}",
                error="the reply has neither an Action nor a Final Answer",
            )
        tool = self.tools.get(step.action)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            message = f"Error: unknown tool '{step.action}' (available tools: {known})"
            return self._observe(ctx, step, message, error=message[len("Error: ") :])
        try:
            result = tool(step.action_input)
        except Exception as exc:
            return self._observe(ctx, step, f"Error: {type(exc).__name__}: {exc}", error=exc)
        return self._observe(ctx, step, result)

    def _observe(
        self,
        ctx: StepContext[Any],
        step: Step,
        observation: Any,
        *,
        error: BaseException | str | None = None,
    ) -> Step:
        ctx.messages.append(self.observation_message(observation_text(observation)))
        step.observation = observation
        step.error = error
        return step


def text_step(model: Model, tools: Mapping[str, Tool]) -> TextStep:
    """A step function for the classic text ReAct loop; see :class:`TextStep`."""
    return TextStep(model, tools)
