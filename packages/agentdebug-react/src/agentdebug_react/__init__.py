"""agentdebug for hand-written ReAct loops: capture, checkpoints, diagnosis, rerun.

    from agentdebug_react import Step, react_loop

    @react_loop(max_steps=8, success=lambda answer: answer == "42")
    def agent(ctx):                      # one iteration: think, act, observe
        reply = my_model(ctx.messages)
        ...
        return Step(thought=..., action="search", action_input=..., observation=...)

    result = agent.run("What is six times seven?")   # recorded, diagnosed if it fails
    executor = agent.executor()                      # reruns it from any step

``text_step(model, tools)`` is a ready-made step function for the classic
Thought/Action/Action Input/Observation text format; ``parse_transcript`` reads
such a transcript into a trajectory.
"""

from __future__ import annotations

from agentdebug_react._importer import TranscriptImporter
from agentdebug_react._loop import ReactLoop, react_loop
from agentdebug_react._parse import (
    TranscriptError,
    load_transcript,
    parse_action_input,
    parse_reply,
    parse_transcript,
)
from agentdebug_react._rerun import ReactExecutor, load_loop
from agentdebug_react._run import DIRECTIVE_PREFIX, ReactRun, default_directive_message
from agentdebug_react._snapshot import (
    CHECKPOINT_KEY,
    JsonSnapshotter,
    RestorePoint,
    Snapshotter,
    restore_point,
)
from agentdebug_react._step import (
    DEFAULT_AGENT,
    FRAMEWORK,
    Message,
    ReactResult,
    Step,
    StepContext,
    ToolCall,
)
from agentdebug_react._text import TextStep, text_step

__version__ = "0.1.0"

__all__ = [
    "CHECKPOINT_KEY",
    "DEFAULT_AGENT",
    "DIRECTIVE_PREFIX",
    "FRAMEWORK",
    "JsonSnapshotter",
    "Message",
    "ReactExecutor",
    "ReactLoop",
    "ReactResult",
    "ReactRun",
    "RestorePoint",
    "Snapshotter",
    "Step",
    "StepContext",
    "TextStep",
    "ToolCall",
    "TranscriptError",
    "TranscriptImporter",
    "__version__",
    "default_directive_message",
    "load_loop",
    "load_transcript",
    "parse_action_input",
    "parse_reply",
    "parse_transcript",
    "react_loop",
    "restore_point",
    "text_step",
]
