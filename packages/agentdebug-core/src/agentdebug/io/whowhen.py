"""Who&When (ICML 2025): failed multi-agent runs labelled with the agent and step to blame.

One file is one run: ``question``, ``ground_truth``, a ``history`` of messages, and
the label (``mistake_agent``, ``mistake_step``, ``mistake_reason``). Two subsets
differ in shape:

* Algorithm-Generated (AG2 group chats): the speaker is ``name``; the tool runner
  ``Computer_terminal`` answers with ``exitcode: N (execution ...)``; agents'
  instructions are in ``system_prompt``. ``history[0]`` is the first expert's turn
  (the task from the manager and that expert's answer together), so it is an
  agent's message, blameable like any other.
* Hand-Crafted (Magentic-One): the speaker is ``role``, e.g. ``Orchestrator
  (thought)`` or ``Orchestrator (-> WebSurfer)``; ``history[0]`` is the human task.

Every history entry becomes exactly one event whose ``step_index`` is its index in
``history``, so ``mistake_step`` names an event directly. The label goes only into
the returned :class:`GoldLabel`, never into the trajectory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from agentdebug.errors import InputError
from agentdebug.io._common import check_size, from_validation_error, not_one_object, type_name
from agentdebug.limits import max_event_bytes
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    EventType,
    GoldLabel,
    Outcome,
    OutcomeStatus,
)
from agentdebug.stages import ImportedRun, Source

AG = "Algorithm-Generated"
HC = "Hand-Crafted"

#: Fields that are the benchmark's answer key: they go to the GoldLabel only.
LABEL_FIELDS = frozenset(
    {
        "mistake_agent",
        "mistake_step",
        "mistake_reason",
        "mistake_type",
        "is_correct",
        "is_corrected",
        "labels",
    }
)

_ROLE = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<suffix>[^()]*)\)\s*$")
_AG_EXIT = re.compile(r"^\s*exitcode:\s*(-?\d+)")
_HC_EXIT = re.compile(r"exited with Unix exit code:\s*(-?\d+)")
_EXC_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)):\s?(?P<msg>.*)$"
)
_FINAL = re.compile(r"^FINAL ANSWER:\s*(?P<answer>.*)$", re.MULTILINE)
_TERMINALS = {"computer_terminal", "computerterminal"}
_HUMAN = {"human", "user"}


def normalise_agent(name: str) -> str:
    """``Orchestrator (thought)`` -> ``Orchestrator``; other names stripped of spaces."""
    match = _ROLE.match(name)
    return match.group("agent").strip() if match else name.strip()


class WhoWhenImporter:
    """Reads Who&When files (both subsets)."""

    name = "whowhen"
    description = "Who&When benchmark run (Algorithm-Generated or Hand-Crafted) with its gold label"

    def sniff(self, source: Source) -> str | None:
        if (why := not_one_object(source)) is not None:
            return why
        doc = source.document
        if not isinstance(doc.get("history"), list):
            return "no 'history' list"
        if "question" not in doc:
            return "no 'question' field"
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        assert isinstance(doc, Mapping)
        yield _load(doc, source)


def _subset(doc: Mapping[str, Any], source: Source) -> str:
    parent = source.path.parent.name
    if parent in (AG, HC):
        return parent
    history = doc.get("history") or []
    if "system_prompt" in doc or any(isinstance(h, Mapping) and "name" in h for h in history):
        return AG
    return HC


def _string(doc: Mapping[str, Any], key: str, name: str, *, required: bool) -> str | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise InputError("missing", source=name, field=key)
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {type_name(value)}", source=name, field=key)
    return value


def _exit_status(content: str) -> tuple[int | None, dict[str, Any] | None]:
    """The exit code a terminal reported and, if it failed, the error to attach."""
    match = _AG_EXIT.match(content) or _HC_EXIT.search(content)
    code = int(match.group(1)) if match else None
    has_traceback = "Traceback (most recent call last)" in content
    if not has_traceback and not code:
        return code, None
    exc_type: str | None = None
    message: str | None = None
    for line in reversed(content.splitlines()):
        found = _EXC_LINE.match(line.strip())
        if found:
            exc_type, message = found.group("type"), line.strip()
            break
    if message is None:
        message = f"exit code {code}" if code else "the output shows a traceback"
    return code, {"message": message, "type": exc_type}


def _event_for(
    index: int, entry: Mapping[str, Any], subset: str, seen_plan: bool, name: str
) -> dict[str, Any]:
    where = f"history[{index}]"
    content = entry.get("content")
    if content is None:
        if "content" not in entry:
            raise InputError("missing", source=name, record=index, field=f"{where}.content")
        content = ""
    if not isinstance(content, str):
        raise InputError(
            f"expected a string, got {type_name(content)}",
            source=name,
            record=index,
            field=f"{where}.content",
        )
    speaker_key = "name" if subset == AG and "name" in entry else "role"
    speaker = entry.get(speaker_key)
    if not isinstance(speaker, str) or not speaker.strip():
        problem = "missing" if speaker is None else f"expected a name, got {speaker!r}"
        raise InputError(problem, source=name, record=index, field=f"{where}.{speaker_key}")

    check_size(
        content, source=name, record=index, field=f"{where}.content", limit=max_event_bytes()
    )
    metadata: dict[str, Any] = {}
    if isinstance(entry.get("role"), str):
        metadata["role"] = entry["role"]
    event: dict[str, Any] = {"id": f"e{index}", "step_index": index, "output": content}
    agent = normalise_agent(speaker)
    match = _ROLE.match(speaker)
    suffix = match.group("suffix").strip() if match else None

    if agent.lower() in _HUMAN:
        event["type"] = EventType.USER_INPUT
        agent_name = None
    elif agent.lower() in _TERMINALS:
        event["type"] = EventType.TOOL_RESULT
        code, error = _exit_status(content)
        if code is not None:
            metadata["exit_code"] = code
        if error is not None:
            event["error"] = error
        agent_name = agent
    elif suffix is not None and suffix.startswith("->"):
        event["type"] = EventType.HANDOFF
        metadata["kind"] = "handoff"
        metadata["target"] = suffix[2:].strip()
        agent_name = agent
    elif suffix == "thought":
        metadata["kind"] = "thought"
        head = content.lstrip()[:40].lower()
        if head.startswith(("initial plan", "new plan")):
            event["type"] = EventType.PLAN
            metadata["plan"] = "revised" if seen_plan else "initial"
        else:
            event["type"] = EventType.REASONING
        agent_name = agent
    elif suffix == "termination condition":
        event["type"] = EventType.FINAL_ANSWER
        metadata["kind"] = "termination"
        first_line = content.strip().splitlines()[0] if content.strip() else ""
        metadata["stop_reason"] = first_line
        final = _FINAL.search(content)
        if final:
            metadata["final_answer"] = final.group("answer").strip()
        agent_name = agent
    else:
        event["type"] = EventType.MESSAGE
        if suffix:
            metadata["kind"] = suffix
        agent_name = agent
    event["agent_name"] = agent_name
    event["metadata"] = metadata
    return event


def _label(doc: Mapping[str, Any], subset: str, trajectory_id: str, name: str) -> GoldLabel:
    raw_step = doc.get("mistake_step")
    step: int | None = None
    if raw_step is not None and raw_step != "":
        if isinstance(raw_step, bool) or not isinstance(raw_step, (str, int)):
            raise InputError(
                f"expected an integer string, got {type_name(raw_step)}",
                source=name,
                field="mistake_step",
            )
        try:
            step = int(str(raw_step).strip())
        except ValueError:
            raise InputError(
                f"expected an integer string, got {raw_step!r}", source=name, field="mistake_step"
            ) from None
        if step < 0:
            raise InputError(f"negative step {step}", source=name, field="mistake_step")
    agent = _string(doc, "mistake_agent", name, required=False)
    metadata: dict[str, Any] = {"subset": subset, "trajectory_id": trajectory_id}
    for key in ("is_correct", "is_corrected", "mistake_type", "labels"):
        if key in doc:
            metadata[key] = doc[key]
    if agent is not None and agent != normalise_agent(agent):
        metadata["raw_agent"] = agent
    return GoldLabel(
        source="whowhen",
        agent_name=normalise_agent(agent) if agent is not None else None,
        step_index=step,
        reason=_string(doc, "mistake_reason", name, required=False),
        metadata=metadata,
    )


def _agents(doc: Mapping[str, Any], events: list[AgentEvent], name: str) -> list[AgentInfo]:
    agents: dict[str, AgentInfo] = {}
    prompts = doc.get("system_prompt")
    if prompts is not None and not isinstance(prompts, Mapping):
        raise InputError(
            f"expected an object of agent name -> prompt, got {type_name(prompts)}",
            source=name,
            field="system_prompt",
        )
    for agent, prompt in (prompts or {}).items():
        agents[str(agent)] = AgentInfo(
            name=str(agent), instructions=prompt if isinstance(prompt, str) else None
        )
    for event in events:
        if event.agent_name and event.agent_name not in agents:
            role = "tool" if event.type is EventType.TOOL_RESULT else None
            agents[event.agent_name] = AgentInfo(name=event.agent_name, role=role)
    return list(agents.values())


def _load(doc: Mapping[str, Any], source: Source) -> ImportedRun:
    name = source.name
    subset = _subset(doc, source)
    code = "ag" if subset == AG else "hc"
    trajectory_id = f"whowhen-{code}-{source.path.stem}"
    history = doc["history"]
    if not history:
        raise InputError("no events: 'history' is empty", source=name, field="history")
    goal = _string(doc, "question", name, required=True)

    events: list[AgentEvent] = []
    seen_plan = False
    final_answer: str | None = None
    for index, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            raise InputError(
                f"expected an object, got {type_name(entry)}",
                source=name,
                record=index,
                field=f"history[{index}]",
            )
        data = _event_for(index, entry, subset, seen_plan, name)
        seen_plan = seen_plan or data["type"] is EventType.PLAN
        if data["type"] is EventType.FINAL_ANSWER:
            final_answer = data["metadata"].get("final_answer", final_answer)
        try:
            events.append(AgentEvent.model_validate(data))
        except ValidationError as exc:  # pragma: no cover - the fields are built above
            raise from_validation_error(
                exc, source=name, record=index, prefix=f"history[{index}]"
            ) from None

    metadata: dict[str, Any] = {
        "benchmark": "whowhen",
        "subset": subset,
        "source_file": source.path.name,
    }
    for key in ("question_ID", "level"):
        if key in doc:
            metadata[key] = doc[key]
    label = _label(doc, subset, trajectory_id, name)
    trajectory = AgentTrajectory(
        id=trajectory_id,
        goal=goal,
        framework="ag2" if subset == AG else "magentic-one",
        agents=_agents(doc, events, name),
        events=events,
        outcome=Outcome(
            status=OutcomeStatus.FAILURE,
            final_answer=final_answer,
            reason="Who&When holds only failed runs: the answer did not match the reference",
        ),
        reference_answer=_string(doc, "ground_truth", name, required=False),
        metadata=metadata,
    )
    return ImportedRun(trajectory=trajectory, label=label)
