"""Multi-granular views of a trajectory, sized for a model's prompt.

    from agentdebug.views import build_view, window, steps_of, render_step, Granularity
    view = build_view(trajectory, focus=[12], budget_tokens=32_000)
    prompt = TEMPLATE.format(trace=view.text)      # view.tokens <= 32_000

A step is shown at one of three granularities: FULL (everything it holds, an LLM
call's input reduced to the messages its agent had not sent before), MEDIUM
(intent, action, result) or COARSE (one line: status, key entities, what the agent
said it would do next); runs of coarse steps fold into one line when room is short.
A view shows every step in full when the whole fits its budget, and gives up
detail (far from the focus first, or the oldest first) only as far as it must.
Medium and coarse views are extractive (sentences and names taken from the step
itself) and deterministic, since no model is there to summarise.
"""

from agentdebug.views._build import TraceView, build_view, window
from agentdebug.views._inline import inline
from agentdebug.views._render import render_step
from agentdebug.views._steps import Granularity, Step, steps_of

__all__ = [
    "Granularity",
    "Step",
    "TraceView",
    "build_view",
    "inline",
    "render_step",
    "steps_of",
    "window",
]
