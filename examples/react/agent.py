"""A hand-written ReAct agent whose run fails because of its first decision.

The task: "What was ACME's total revenue in Q3 2024?". The reports live in a
``reports/`` folder the agent has never seen. At step 1 the agent guesses a file
name instead of looking; the read fails (``FileNotFoundError``), and the agent
falls back to ``reports/latest.csv``, a stale export that holds Q2's numbers. It
adds them up correctly and answers with confidence: the failure only shows at
the end, as a wrong answer, but it was decided at step 1.

The model is scripted (a plain function of the message list, no network): it
reads the conversation and answers as a model would. It does what its messages
tell it; in particular, an instruction in the conversation to locate or list a
resource before using it makes it look before it reads. That is how the rerun's
directive changes its behaviour: through the restored messages, not a flag.

``make_loop`` and ``make_executor`` are the factories the agentdebug command uses
to rerun a stored run of this agent (see README.md).
"""

from __future__ import annotations

import re
from typing import Any

from agentdebug import AgentDebug
from agentdebug_react import Message, ReactExecutor, ReactLoop, text_step

GOAL = "What was ACME's total revenue in Q3 2024? Answer with the number only."
ANSWER = "117200"
AGENT = "analyst"
FACTORY = "examples.react.agent:make_loop"

_Q2 = "quarter,region,revenue\nQ2 2024,North,41200\nQ2 2024,South,38950\nQ2 2024,West,27400\n"
_Q3 = "quarter,region,revenue\nQ3 2024,North,45800\nQ3 2024,South,40150\nQ3 2024,West,31250\n"
FILES = {
    "reports/2024-Q2-revenue.csv": _Q2,
    "reports/2024-Q3-revenue.csv": _Q3,
    "reports/latest.csv": _Q2,  # a stale export nobody updated after Q2
}

SYSTEM = """You are a careful financial analyst. Answer the question using the tools.
Tools:
- list_files: list the files in a folder. Input: the folder name.
- read_file: read a file. Input: its path.
- calculator: add numbers. Input: an expression such as 1 + 2.
Use this format:
Thought: what you think
Action: the tool name
Action Input: its input
(you will then see an Observation), and finally:
Final Answer: the answer"""


# -- tools -------------------------------------------------------------------------------


def list_files(folder: Any) -> list[str]:
    prefix = str(folder).strip().strip("/") + "/"
    found = sorted(name for name in FILES if name.startswith(prefix))
    if not found:
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{folder}'")
    return found


def read_file(path: Any) -> str:
    name = str(path).strip()
    if name not in FILES:
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{name}'")
    return FILES[name]


def calculator(expression: Any) -> str:
    terms = [t.strip() for t in str(expression).split("+")]
    if not all(re.fullmatch(r"-?\d+(?:\.\d+)?", t) for t in terms):
        raise ValueError(f"can only add numbers, got {expression!r}")
    total = sum((float(t) for t in terms), 0.0)
    return str(int(total)) if total.is_integer() else str(total)


TOOLS = {"list_files": list_files, "read_file": read_file, "calculator": calculator}


# -- the scripted model --------------------------------------------------------------------

_LOOK_FIRST = re.compile(r"\b(?:locate|list|search|look up)\b", re.IGNORECASE)


def _instructions(messages: list[Message]) -> str:
    """What the user said after the question, observations aside: corrections."""
    users = [m for m in messages if m.get("role") == "user"]
    return "\n".join(
        str(m.get("content", ""))
        for m in users[1:]
        if not str(m.get("content", "")).startswith("Observation:")
    )


def scripted_model(messages: list[Message]) -> str:
    """The agent's model: a deterministic function of the conversation so far."""
    last = str(messages[-1].get("content", ""))
    observation = last[len("Observation: ") :] if last.startswith("Observation:") else None
    if observation is None:
        if _LOOK_FIRST.search(_instructions(messages)):
            return (
                "Thought: I was told to locate the resource before using it, so I will list "
                "the reports folder first.\nAction: list_files\nAction Input: reports"
            )
        return (
            "Thought: The Q3 2024 figures will be in the quarter's file.\n"
            "Action: read_file\nAction Input: q3-2024.csv"
        )
    if "No such file or directory" in observation:
        return (
            "Thought: That file is not there. The latest report should have the current "
            "numbers.\nAction: read_file\nAction Input: reports/latest.csv"
        )
    if observation.startswith("["):  # a folder listing
        quarter = next((f for f in re.findall(r'"([^"]+)"', observation) if "Q3" in f), None)
        if quarter is not None:
            return (
                f"Thought: {quarter} is the Q3 2024 report.\n"
                f"Action: read_file\nAction Input: {quarter}"
            )
    if observation.startswith("quarter,"):  # a revenue table
        amounts = [line.rsplit(",", 1)[1] for line in observation.strip().splitlines()[1:]]
        return (
            "Thought: I will add up the revenue column.\n"
            f"Action: calculator\nAction Input: {' + '.join(amounts)}"
        )
    if re.fullmatch(r"-?\d+(?:\.\d+)?", observation.strip()):
        return f"Thought: I now know the final answer.\nFinal Answer: {observation.strip()}"
    return "Thought: I cannot find the answer.\nFinal Answer: unknown"


# -- the loop and its factories ------------------------------------------------------------


def is_right(answer: Any) -> bool:
    """The user's success check: the exact Q3 total."""
    return str(answer).replace(",", "").strip() == ANSWER


def make_loop(debugger: AgentDebug | None = None) -> ReactLoop[None]:
    """The agent as a recorded ReAct loop (the factory stored on every run)."""
    return ReactLoop(
        text_step(scripted_model, TOOLS),
        debugger=debugger,
        agent_name=AGENT,
        max_steps=6,
        success=is_right,
        factory=FACTORY,
        instructions=SYSTEM,
    )


def make_executor(debugger: AgentDebug | None = None) -> ReactExecutor:
    """For ``agentdebug act RUN --rerun --executor examples.react.agent:make_executor``."""
    return ReactExecutor(make_loop(debugger))


def run_agent(debugger: AgentDebug | None = None) -> Any:
    """One run of the agent on the task, recorded (and diagnosed when it fails)."""
    loop = make_loop(debugger)
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": GOAL},
    ]
    return loop.run(GOAL, messages=messages, reference_answer=ANSWER)
