"""Branch comparison: align two runs event by event, find where they part.

Two events match when they have the same type, agent, module and payloads (input,
output, error message). A branch inherits its parent's events before the resume
step unchanged, so the first divergence is normally the resume step; anything
else (an earlier divergence) says the rerun did not start where it claimed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentdebug.rerun.score import final_answer
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.schema.rerun import ancestors
from agentdebug.text import shorten


def payload_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:
        return repr(value).encode()


def signature(event: AgentEvent) -> tuple[Any, ...]:
    return (
        event.type.value,
        event.agent_name,
        event.module,
        payload_bytes(event.input),
        payload_bytes(event.output),
        event.error.message if event.error else None,
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else payload_bytes(value).decode("utf-8", "replace")
    return " ".join(text.split())


def _head(event: AgentEvent) -> str:
    who = f" {event.agent_name}" if event.agent_name else ""
    return f"step {event.step_index:>3} {event.type.value:<13}{who}: "


def _said(event: AgentEvent) -> str:
    """The most telling payload of an event, whole, on one line."""
    value = (
        event.error.message
        if event.error
        else (event.output if event.output is not None else event.input)
    )
    text = _text(value)
    tool = event.metadata.get("tool_name") or event.module  # (as `show` names it)
    if event.type is EventType.TOOL_CALL and isinstance(tool, str) and tool and not event.error:
        text = f"{tool}({text})"  # (which tool: a call's arguments alone do not say)
    return text


def brief(event: AgentEvent, width: int = 100) -> str:
    """One line: step, type, agent, and the most telling payload."""
    return _head(event) + shorten(_said(event), width)


def _from_difference(ta: str, tb: str, width: int) -> tuple[str, str]:
    """Two texts from a little before where they first differ, each cut to ``width``."""
    at = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), None)
    if at is None:
        at = min(len(ta), len(tb))
    start = max(0, at - 20)
    cut = "…" if start else ""
    return shorten(cut + ta[start:], width), shorten(cut + tb[start:], width)


def _given_apart(a: AgentEvent, b: AgentEvent, width: int = 100) -> tuple[str, str]:
    """Two events that read the same at the width shown: where what they said first
    differs (a model answer whose tool calls differ past the width: get_time and
    get_weather), else where what they were given does (a model call whose prompt a
    directive changed), each from a little before that point."""
    ta, tb = _said(a), _said(b)
    if ta != tb:
        sa, sb = _from_difference(ta, tb, width)
        return _head(a) + sa, _head(b) + sb
    ta, tb = _text(a.input), _text(b.input)
    if ta == tb:  # (no difference there either: as they read)
        return brief(a, width), brief(b, width)
    sa, sb = _from_difference(ta, tb, width)
    return _head(a) + "given " + sa, _head(b) + "given " + sb


@dataclass(frozen=True)
class Row:
    """One line of the alignment: ``same``, ``changed``, ``only_a`` or ``only_b``."""

    tag: str
    a: AgentEvent | None
    b: AgentEvent | None


@dataclass
class BranchDiff:
    a: AgentTrajectory
    b: AgentTrajectory
    rows: list[Row] = field(default_factory=list)

    @property
    def shared_prefix(self) -> int:
        """How many events both runs share before they first differ."""
        n = 0
        for row in self.rows:
            if row.tag != "same":
                break
            n += 1
        return n

    @property
    def first_divergence(self) -> Row | None:
        return next((r for r in self.rows if r.tag != "same"), None)

    @property
    def related(self) -> str:
        if self.b.parent_id == self.a.id:
            return f"{self.b.id} is a branch of {self.a.id}"
        if self.a.parent_id == self.b.id:
            return f"{self.a.id} is a branch of {self.b.id}"
        if self.a.parent_id and self.a.parent_id == self.b.parent_id:
            return f"both are branches of {self.a.parent_id}"
        up_a, up_b = ancestors(self.a), ancestors(self.b)
        if self.a.id in up_b:
            return f"{self.b.id} descends from {self.a.id} ({_reruns(up_b, self.a.id)})"
        if self.b.id in up_a:
            return f"{self.a.id} descends from {self.b.id} ({_reruns(up_a, self.b.id)})"
        common = next((x for x in reversed(up_a) if x in up_b), None)
        if common is not None:
            return f"both descend from {common}"
        return "the runs are not linked by a rerun"

    def to_dict(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "a": _side(self.a),
            "b": _side(self.b),
            "related": self.related,
            "shared_prefix": self.shared_prefix,
            "first_divergence": None
            if first is None
            else {
                "tag": first.tag,
                "a_step": first.a.step_index if first.a else None,
                "b_step": first.b.step_index if first.b else None,
                "a_event": first.a.id if first.a else None,
                "b_event": first.b.id if first.b else None,
            },
            "rows": [
                {"tag": r.tag, "a": r.a.id if r.a else None, "b": r.b.id if r.b else None}
                for r in self.rows
            ],
        }

    def render(self, context: int = 2, limit: int = 40) -> str:
        """Text: both outcomes, the shared prefix, then the aligned events from a
        little before the first divergence (``-`` only in A, ``+`` only in B,
        ``~`` changed)."""
        out = []
        for label, run in (("A", self.a), ("B", self.b)):
            side = _side(run)
            answer = side["final_answer"]
            said = f"final answer: {answer}" if answer is not None else "no final answer"
            out.append(f"{label}: {run.id}  outcome {side['outcome']}  {said}")
            branch = run.metadata.get("branch")
            if isinstance(branch, dict) and branch.get("directive"):
                out.append(
                    f"   rerun from step {branch.get('resume_step')} with directive: "
                    f"{shorten(str(branch['directive']), 160)}"
                )
        out.append(self.related)
        first = self.first_divergence
        if first is None:
            out.append(f"No divergence: the {len(self.rows)} events are the same.")
            return "\n".join(out)
        if first.a is not None and first.b is not None:
            where = f"A step {first.a.step_index} / B step {first.b.step_index}"
        elif first.b is not None:
            where = f"step {first.b.step_index}, an event only in B"
        else:
            assert first.a is not None
            where = f"step {first.a.step_index}, an event only in A"
        out.append(f"Shared: the first {self.shared_prefix} event(s). First divergence: {where}.")
        start = max(0, self.shared_prefix - context)
        shown = self.rows[start : start + limit]
        for row in shown:
            if row.tag == "same":
                out.append(f"    {brief(row.a)}" if row.a else "")
            elif row.tag == "changed" and row.a is not None and row.b is not None:
                a, b = brief(row.a), brief(row.b)
                if a == b:  # the same to see: what differs is what it was given
                    a, b = _given_apart(row.a, row.b)
                out.append(f"  ~ A {a}")
                out.append(f"    B {b}")
            elif row.tag == "only_a" and row.a:
                out.append(f"  - {brief(row.a)}")
            elif row.b:
                out.append(f"  + {brief(row.b)}")
        if start + limit < len(self.rows):
            out.append(f"  ... {len(self.rows) - start - limit} more aligned event(s)")
        return "\n".join(out)


def _side(run: AgentTrajectory) -> dict[str, Any]:
    answer = final_answer(run)
    return {
        "id": run.id,
        "outcome": run.outcome.status.value,
        "final_answer": shorten(str(answer), 120) if answer is not None else None,
        "events": len(run.events),
        "parent_id": run.parent_id,
    }


def compare(a: AgentTrajectory, b: AgentTrajectory) -> BranchDiff:
    """Align ``a`` and ``b`` (typically an original and its branch): events with the
    same content match; inside a stretch that differs, events of the same type and
    agent pair up as ``changed`` and the rest stand alone. Both runs are read in
    step order (:meth:`AgentTrajectory.step_order`), as ``show`` prints them."""
    ea = [a.events[i] for i in a.step_order()]
    eb = [b.events[i] for i in b.step_order()]
    sa = [signature(e) for e in ea]
    sb = [signature(e) for e in eb]
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [Row("same", ea[i1 + k], eb[j1 + k]) for k in range(i2 - i1)]
        else:
            rows += _pair(ea[i1:i2], eb[j1:j2])
    return BranchDiff(a, b, rows)


def _pair(xs: list[AgentEvent], ys: list[AgentEvent]) -> list[Row]:
    """Rows for a stretch where the two runs differ, paired by (type, agent)."""
    kind = difflib.SequenceMatcher(
        a=[(e.type, e.agent_name) for e in xs],
        b=[(e.type, e.agent_name) for e in ys],
        autojunk=False,
    )
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in kind.get_opcodes():
        if tag == "equal":
            rows += [Row("changed", xs[i1 + k], ys[j1 + k]) for k in range(i2 - i1)]
            continue
        rows += [Row("only_a", x, None) for x in xs[i1:i2]]
        rows += [Row("only_b", None, y) for y in ys[j1:j2]]
    return rows


def _reruns(lineage: list[str], ancestor: str) -> str:
    n = len(lineage) - lineage.index(ancestor)
    return f"a branch of a branch, {n} reruns down" if n > 1 else "a branch of it"
