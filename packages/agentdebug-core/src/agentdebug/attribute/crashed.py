"""A tool whose own code crashed on the task's own arguments.

The free tier charges a failed tool call to the decision that issued it: a tool
rarely fails by itself, its arguments do. Not so when the call passed what the
user wrote, word for word ("SKU-123" of "How many units of SKU-123 do we have?"),
and the tool died of a programming error in its own code, an error Python itself
words ("invalid literal for int() with base 10: 'SKU-123'", "'NoneType' object has
no attribute 'get'", "list index out of range"), not a message the tool wrote for
its caller ("SKU must be digits"; "pass the numeric part only"), on an identifier
the user wrote, letters and digits together, whose form the tool is to read: not a
name ("Smith" for an order id: the wrong argument), a number (a division by the
zero the user asked for), or words a model was to convert ("twelve", "next
Friday", "ten dollars"), which stay the call's fault. The model did what it was asked; the tool's
code is what to fix, and blaming the model (a rerun that tells it to pass "123"
would even pass, and "verify" the wrong blame) leaves the bug in place.
"""

from __future__ import annotations

import re

from agentdebug.detect.invented import from_task, leaves
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.text import compact_json, flatten, shorten

# what Python's own errors say (not a tool's message to its caller)
_PYTHON_SAYS = re.compile(
    r"invalid literal for (?:int|float|complex)\(\)|could not convert string to float|"
    r"unsupported operand type|object is not (?:subscriptable|callable|iterable)|"
    r"object has no attribute|(?:list|string|tuple) index out of range|"
    r"positional arguments? but \d+ (?:were|was) given|"
    r"missing \d+ required (?:positional|keyword-only) argument|"
    r"(?:not enough|too many) values to unpack|referenced before assignment|"
    r"name '[^']+' is not defined|can only concatenate|must be (?:str|int|real number), not|"
    r"unexpected keyword argument|time data .+ does not match format",
)
# a message that tells its caller what to pass: the tool's own, however it begins
_INSTRUCTS = re.compile(
    r"\b(?:e\.g\.|please|pass|use|should|must|expected|try|instead|only)\b", re.I
)
# an identifier the user wrote, letters and digits together ("SKU-123", "INV/0042"),
# whose form the tool is to read: not a name, a number or words for a model to convert
_CODE = re.compile(r"(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[A-Za-z0-9][\w./#:-]*[A-Za-z0-9]")
_PYTHON_ERRORS = frozenset(
    {
        "ValueError",
        "TypeError",
        "AttributeError",
        "IndexError",
        "NameError",
        "UnboundLocalError",
    }
)


def crashed_on_task(trajectory: AgentTrajectory, failed: AgentEvent, call: AgentEvent) -> bool:
    """Whether ``failed`` (a tool's failed result, or its call) is the tool's own code
    crashing on ``call``'s arguments, every one of them written in the task."""
    error = failed.error
    if error is None or call.type is not EventType.TOOL_CALL or not call.input:
        return False
    if error.type not in _PYTHON_ERRORS or not _PYTHON_SAYS.search(error.message or ""):
        return False
    if _INSTRUCTS.search(error.message or ""):
        return False  # (the tool's own message, telling its caller what to pass)
    if not any(_CODE.fullmatch(v.strip()) for v in leaves(call.input)):
        return False  # (a name, a number, "next Friday": the caller's to convert)
    task = " ".join(
        flatten(e.input, limit=4000) for e in trajectory.events if e.type is EventType.USER_INPUT
    )
    return bool(task) and from_task(call, task)


def code_fix(failed: AgentEvent, call: AgentEvent, said: str) -> str:
    """The fix for a tool that crashed on the task's own arguments: to its code."""
    tool = tool_name(failed) or "the tool"
    return (
        f"At step {failed.step_index}, {failed.agent_name or 'the tool'}: {tool} crashed on "
        f'the arguments the task gave ({shorten(compact_json(call.input), 80)}): "'
        f"{shorten(said, 160)}\". Fix the tool's code to handle input of that form (the "
        "call passed what the task wrote); a rerun would run the same code."
    )


def unimplemented(failed: AgentEvent) -> bool:
    """Whether ``failed`` raised ``NotImplementedError``: code with no
    implementation for the way it was run (LangChain's "StructuredTool does not
    support sync invocation": a tool with only an async function, run by a sync
    ``invoke``), which no argument and no decision changes."""
    return failed.error is not None and failed.error.type == "NotImplementedError"


def unimplemented_fix(failed: AgentEvent, said: str) -> str:
    """The fix for code that raised ``NotImplementedError``: to the code, or to how
    the agent is run."""
    who = tool_name(failed) or failed.agent_name or "the step"
    return (
        f"At step {failed.step_index}, {failed.agent_name or 'the tool'}: {who} raised "
        f'NotImplementedError ("{shorten(said, 160)}"): its code has no implementation for '
        "the way it was run. Implement it, or run it the way it supports (a tool with only "
        "an async function needs the agent run with ainvoke or astream, or a sync function "
        "of its own); no decision of the agent's and no rerun changes it."
    )
