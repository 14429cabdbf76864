"""The classic ReAct text format: model replies and whole transcripts.

    Question: What is the elevation range of the area the eastern sector extends into?
    Thought: I need to search Colorado orogeny.
    Action: search
    Action Input: {"query": "Colorado orogeny"}
    Observation: The Colorado orogeny was an episode of mountain building ...
    Thought: I now know the final answer.
    Final Answer: 1,800 to 7,000 ft

Labels may carry the step number (``Thought 2:``, as in the ReAct paper), and the
paper's ``Action: Search[Apple Remote]`` / ``Action: Finish[answer]`` forms are
read too. A line without a label continues the field above it, so observations
and inputs can span lines. An Action Input that looks like JSON is parsed; one
that does not parse is kept as text, so the rule pack can report it as a
malformed tool call.

A transcript is evidence, so it is read strictly: anything out of order is a
:class:`TranscriptError` naming the line. A single model reply is read as a
model's output is: text before the first label is its thought (ReAct prompts end
with ``Thought:``), and a hallucinated ``Observation:`` ends the reply.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from agentdebug.errors import InputError
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    EventType,
    Outcome,
    OutcomeStatus,
)

from agentdebug_react._step import DEFAULT_AGENT, FRAMEWORK, Step

# (in any case: models write "thought:", "FINAL ANSWER:" as often as the prompt's form)
_LABEL = re.compile(
    r"^[ \t]*(?P<label>Question|Thought|Action[ \t]+Input|Action|Observation|"
    r"Final[ \t]+Answer)(?:[ \t]+(?P<number>\d+))?[ \t]*:[ \t]?(?P<rest>.*)$",
    re.IGNORECASE,
)
_BRACKET = re.compile(r"^(?P<name>[A-Za-z_][\w.\-]*)\[(?P<arg>.*)\]$", re.DOTALL)
_KINDS = {
    "question": "question",
    "thought": "thought",
    "action": "action",
    "action input": "input",
    "observation": "observation",
    "final answer": "final",
}
_NAMES = {
    "question": "Question",
    "thought": "Thought",
    "action": "Action",
    "input": "Action Input",
    "observation": "Observation",
    "final": "Final Answer",
}


class TranscriptError(InputError):
    """A ReAct transcript or reply that cannot be read; ``line`` is 1-based."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> None:
        self.line = line
        self.reason = message
        # a transcript inside a field (a JSON Lines file's line 4, say) has lines of
        # its own: "its line 2", not to be read as the file's
        said = "line" if field is None else "its line"
        super().__init__(
            f"{said} {line}: {message}" if line is not None else message,
            source=source,
            record=record,
            field=field,
            lineno=lineno,
        )

    def located(
        self,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> InputError:
        return type(self)(
            self.reason,
            line=self.line,
            source=self.source or source,
            record=self.record if self.record is not None else record,
            field=self.field or field,
            lineno=self.lineno if self.lineno is not None else lineno,
        )


@dataclass
class _Field:
    kind: str
    number: int | None
    line: int
    head: str
    lines: list[str] = field(default_factory=list)
    # the lines of labels read as this field's text (an Observation quoting a transcript)
    quoted: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()

    @property
    def name(self) -> str:
        return _NAMES[self.kind]


def _short(text: str, width: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _fields(text: str) -> tuple[list[str], list[_Field]]:
    """(lines before the first label, labelled fields with their continuation lines)."""
    preamble: list[str] = []
    fields: list[_Field] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        match = _LABEL.match(raw)
        if match is None:
            (fields[-1].lines if fields else preamble).append(raw)
            continue
        label = " ".join(match["label"].lower().split())
        fields.append(
            _Field(
                kind=_KINDS[label],
                number=int(match["number"]) if match["number"] else None,
                line=number,
                head=raw,
                lines=[match["rest"]],
            )
        )
    return preamble, fields


def parse_action_input(text: str) -> Any:
    """JSON when it parses as JSON, otherwise the text itself."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"'):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return stripped
    return stripped


def _split_action(name: str) -> tuple[str, str | None]:
    """``Search[Apple]`` -> ("Search", "Apple"); ``search`` -> ("search", None)."""
    match = _BRACKET.match(name.strip())
    if match is None:
        return name.strip(), None
    return match["name"], match["arg"]


# -- single replies --------------------------------------------------------------------


def parse_reply(text: str) -> Step:
    """One model reply as a Step: its thought, and an action or a final answer.

    Raises :class:`TranscriptError` for a reply that contradicts itself (an action
    and a final answer, two actions, an input with no action); a reply with
    neither an action nor a final answer is a thought-only Step.
    """
    preamble, fields = _fields(text)
    notes: dict[str, Any] = {}
    cut = next((i for i, f in enumerate(fields) if f.kind == "observation"), None)
    if cut is not None:
        notes["reply_cut_at_line"] = fields[cut].line  # the model wrote its own observation
        fields = fields[:cut]
    thoughts = ["\n".join(preamble).strip()] + [f.text for f in fields if f.kind == "thought"]
    thought = "\n".join(t for t in thoughts if t) or None
    actions = [f for f in fields if f.kind == "action"]
    inputs = [f for f in fields if f.kind == "input"]
    finals = [f for f in fields if f.kind == "final"]
    stray = next((f for f in fields if f.kind == "question"), None)
    if stray is not None:
        raise TranscriptError(
            f"a reply should not ask a 'Question': {_short(stray.head)!r}", line=stray.line
        )
    if len(actions) > 1:
        raise TranscriptError(
            f"more than one Action in one reply (lines {', '.join(str(a.line) for a in actions)})",
            line=actions[1].line,
        )
    if len(inputs) > 1:
        raise TranscriptError("more than one Action Input in one reply", line=inputs[1].line)
    if inputs and not actions:
        raise TranscriptError(
            f"'Action Input' with no 'Action' before it: {_short(inputs[0].head)!r}",
            line=inputs[0].line,
        )
    if len(finals) > 1:
        raise TranscriptError("more than one Final Answer in one reply", line=finals[1].line)
    if actions and finals:
        raise TranscriptError(
            f"both an Action (line {actions[0].line}) and a Final Answer "
            f"(line {finals[0].line}) in one reply",
            line=finals[0].line,
        )
    if finals:
        step = Step.finish(finals[0].text, thought=thought)
        step.metadata.update(notes)
        return step
    if actions:
        action = actions[0]
        if inputs and inputs[0].line < action.line:
            raise TranscriptError(
                f"'Action Input' before its 'Action': {_short(inputs[0].head)!r}",
                line=inputs[0].line,
            )
        name, inline = _split_action(action.text)
        if not name:
            raise TranscriptError("an 'Action' with no tool name", line=action.line)
        if name.lower() == "finish" and inline is not None and not inputs:
            step = Step.finish(inline.strip(), thought=thought)
        else:
            value: Any = (
                parse_action_input(inputs[0].text)
                if inputs
                else (parse_action_input(inline) if inline is not None else None)
            )
            step = Step(thought=thought, action=name, action_input=value)
        step.metadata.update(notes)
        return step
    return Step(thought=thought, metadata=notes)


# -- whole transcripts ---------------------------------------------------------------------


@dataclass
class _Draft:
    """One step of a transcript as it is read, with the line of each field."""

    number: int
    thought: _Field | None = None
    action: _Field | None = None
    input: _Field | None = None
    observation: _Field | None = None
    final: _Field | None = None

    @property
    def empty(self) -> bool:
        return not (self.thought or self.action or self.observation or self.final)


def _read_steps(fields: list[_Field]) -> tuple[_Field | None, list[_Draft]]:
    """The steps of a transcript. A tool's output may itself hold labelled lines (a
    page about ReAct, a log quoting a transcript): read as labels, they break the
    order at the next real label. So where the order breaks after an Observation
    at a Thought (the next step beginning), the labelled lines between them, when
    they hold no Final Answer, are taken as the Observation's text (their lines kept in ``quoted``) and the
    transcript read again; a transcript still out of order is an error naming the
    line where it first broke."""
    first: TranscriptError | None = None
    while True:
        try:
            return _fold_quoted_thoughts(*_read_in_order(fields))
        except TranscriptError as exc:
            first = first or exc
            at = next((i for i, f in enumerate(fields) if f.line == exc.line), 0)
            seen = max((j for j in range(at) if fields[j].kind == "observation"), default=None)
            if (
                seen is None
                or seen == at - 1  # (nothing between them to take as its text)
                or fields[at].kind != "thought"  # (the break is no next step beginning)
                or any(f.kind == "final" for f in fields[seen + 1 : at])  # (the model's own)
            ):
                raise first from None
            observation = fields[seen]
            for quoted in fields[seen + 1 : at]:
                observation.lines += [quoted.head, *quoted.lines[1:]]
                observation.quoted.append(quoted.line)
            fields = fields[: seen + 1] + fields[at:]


def _fold_quoted_thoughts(
    question: _Field | None, steps: list[_Draft]
) -> tuple[_Field | None, list[_Draft]]:
    """A tool's output that quotes a single unnumbered ``Thought:`` line breaks no
    order, so it was read as a step of a thought alone. A step is a Thought and an
    Action or a Final Answer; one of a thought alone, right after an Observation
    whose text introduces a quote (ends with ":") and before the next step, is the
    Observation's text (its line kept in ``quoted``). A model's own second thought
    after an Observation ("Thought: it may be an error." "Thought: I now know...")
    stays a step."""
    out: list[_Draft] = []
    for i, step in enumerate(steps):
        before = out[-1] if out else None
        alone = (
            step.thought is not None
            and step.thought.number is None
            and not (step.action or step.observation or step.final)
        )
        if (
            alone
            and before is not None
            and before.observation is not None
            and before.observation.text.endswith(":")  # (it introduces what it quotes)
            and i + 1 < len(steps)
        ):
            assert step.thought is not None
            before.observation.lines += [step.thought.head, *step.thought.lines[1:]]
            before.observation.quoted.append(step.thought.line)
            continue
        step.number = len(out) + 1
        out.append(step)
    return question, out


def _read_in_order(fields: list[_Field]) -> tuple[_Field | None, list[_Draft]]:
    question: _Field | None = None
    steps: list[_Draft] = []
    current: _Draft | None = None
    final_at: _Field | None = None

    def new_step() -> _Draft:
        nonlocal current
        current = _Draft(number=len(steps) + 1)
        steps.append(current)
        return current

    for f in fields:
        if final_at is not None:
            raise TranscriptError(
                f"{f.name!r} after the Final Answer on line {final_at.line}: {_short(f.head)!r}",
                line=f.line,
            )
        if f.kind == "question":
            if steps or question is not None:
                raise TranscriptError(
                    "'Question' must come first, once: " + repr(_short(f.head)), line=f.line
                )
            question = f
            continue
        step = current
        if f.kind == "thought":
            if step is not None and step.action is not None and step.observation is None:
                raise TranscriptError(
                    f"a 'Thought' while the Action on line {step.action.line} has no Observation",
                    line=f.line,
                )
            if step is None or step.thought or step.action or step.observation:
                step = new_step()
            step.thought = f
        elif f.kind == "action":
            if step is not None and step.action is not None and step.observation is None:
                raise TranscriptError(
                    f"a second 'Action' before the Observation of the Action on line "
                    f"{step.action.line}: {_short(f.head)!r}",
                    line=f.line,
                )
            if step is None or step.observation is not None:
                step = new_step()
            step.action = f
        elif f.kind == "input":
            if step is None or step.action is None or step.observation is not None:
                raise TranscriptError(
                    f"'Action Input' with no 'Action' before it: {_short(f.head)!r}", line=f.line
                )
            if step.input is not None:
                raise TranscriptError(
                    f"a second 'Action Input' for the Action on line {step.action.line}",
                    line=f.line,
                )
            step.input = f
        elif f.kind == "observation":
            if step is None or step.action is None:
                raise TranscriptError(
                    f"'Observation' with no 'Action' before it: {_short(f.head)!r}", line=f.line
                )
            if step.observation is not None:
                raise TranscriptError(
                    f"a second 'Observation' for the Action on line {step.action.line}",
                    line=f.line,
                )
            step.observation = f
        else:  # final answer
            if step is not None and step.action is not None and step.observation is None:
                raise TranscriptError(
                    f"a 'Final Answer' while the Action on line {step.action.line} has no "
                    "Observation",
                    line=f.line,
                )
            if step is None or step.observation is not None:
                step = new_step()
            step.final = f
            final_at = f
        assert step is not None
        if f.number is not None and f.number != step.number:
            raise TranscriptError(
                f"{_short(f.head)!r} is numbered {f.number}, but it belongs to step {step.number}",
                line=f.line,
            )
    return question, steps


def parse_transcript(
    text: str,
    *,
    goal: str | None = None,
    agent_name: str = DEFAULT_AGENT,
    run_id: str | None = None,
    reference_answer: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> AgentTrajectory:
    """A plain-text ReAct transcript as a trajectory, laid out as a captured run:
    the question at step 0, then one step per Thought/Action/Observation (or Final
    Answer), numbered from 1. Raises :class:`TranscriptError` naming the line when
    the transcript is out of order."""
    text = text.removeprefix("\ufeff")  # (a byte order mark: a file saved on Windows)
    preamble, fields = _fields(text)
    first_text = next(((i, line) for i, line in enumerate(preamble, start=1) if line.strip()), None)
    if first_text is not None:
        raise TranscriptError(
            f"text before the first label ({_short(first_text[1])!r}); a ReAct transcript "
            "starts with 'Question:' or 'Thought:'",
            line=first_text[0],
            source=source,
        )
    if not fields:
        raise TranscriptError(
            "no Thought/Action/Observation/Final Answer lines found", source=source
        )
    try:
        question, drafts = _read_steps(fields)
    except TranscriptError as exc:
        raise exc.located(source=source) from None
    if not drafts:
        raise TranscriptError("a Question but no steps", line=fields[0].line, source=source)
    events: list[AgentEvent] = []

    def add(kind: EventType, step: int, where: _Field, **data: Any) -> str:
        event_id = f"e{len(events)}"
        meta = {"line": where.line, **data.pop("metadata", {})}
        events.append(AgentEvent(id=event_id, type=kind, step_index=step, metadata=meta, **data))
        return event_id

    goal = goal if goal is not None else (question.text if question else None)
    if question is not None:
        add(EventType.USER_INPUT, 0, question, input=question.text)
    answer: Any = None
    answered = False
    for draft in drafts:
        k = draft.number
        thought_id = None
        if draft.thought is not None and draft.thought.text:
            thought_id = add(
                EventType.REASONING,
                k,
                draft.thought,
                agent_name=agent_name,
                output=draft.thought.text,
            )
        if draft.action is not None:
            name, inline = _split_action(draft.action.text)
            if not name:
                raise TranscriptError(
                    "an 'Action' with no tool name", line=draft.action.line, source=source
                )
            if inline is not None and draft.input is not None:
                raise TranscriptError(
                    f"the Action on line {draft.action.line} has an input in brackets and an "
                    "'Action Input' line",
                    line=draft.input.line,
                    source=source,
                )
            if name.lower() == "finish" and inline is not None:
                if draft.observation is not None:
                    raise TranscriptError(
                        "'Finish[...]' ends the run, but an Observation follows it",
                        line=draft.observation.line,
                        source=source,
                    )
                answer, answered = inline.strip(), True
                add(
                    EventType.FINAL_ANSWER,
                    k,
                    draft.action,
                    agent_name=agent_name,
                    output=answer,
                    parent_id=thought_id,
                )
                continue
            raw = draft.input.text if draft.input is not None else inline
            call_id = add(
                EventType.TOOL_CALL,
                k,
                draft.action,
                agent_name=agent_name,
                module=name,
                input=parse_action_input(raw) if raw is not None else None,
                parent_id=thought_id,
                metadata={"tool_name": name},
            )
            if draft.observation is not None:
                add(
                    EventType.TOOL_RESULT,
                    k,
                    draft.observation,
                    agent_name=agent_name,
                    module=name,
                    output=draft.observation.text,
                    parent_id=call_id,
                    metadata={"tool_name": name}
                    | (
                        {"quoted_label_lines": quoted}
                        if (quoted := draft.observation.quoted)
                        else {}
                    ),
                )
        if draft.final is not None:
            answer, answered = draft.final.text, True
            add(
                EventType.FINAL_ANSWER,
                k,
                draft.final,
                agent_name=agent_name,
                output=answer,
                parent_id=thought_id,
            )
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return AgentTrajectory(
        id=run_id or f"react-{digest}",
        goal=goal,
        framework=FRAMEWORK,
        agents=[AgentInfo(name=agent_name, role="ReAct agent")],
        events=events,
        outcome=Outcome(
            status=OutcomeStatus.UNKNOWN,
            final_answer=answer,
            reason=None if answered else "the transcript ends without a Final Answer",
        ),
        reference_answer=reference_answer,
        metadata={**(metadata or {}), "imported_from": "react-transcript"},
    )


def load_transcript(path: str | Path, **options: Any) -> AgentTrajectory:
    """A transcript file (plain text, UTF-8) as a trajectory; see :func:`parse_transcript`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", source=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", source=str(path)) from None
    options.setdefault("source", str(path))
    return parse_transcript(text, **options)
