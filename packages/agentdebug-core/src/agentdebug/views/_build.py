"""A whole trajectory (or a range of it) as one text that fits a token budget.

Every step starts in full: a view that fits the budget shows the whole record.
When it does not fit, the planner gives up detail in small moves, as few as it
takes (found by bisection over the ordered moves): with focus steps, the steps
farthest from the focus go first; without, the oldest, the run's first error last.
Renders and token counts are cached per step, so a move costs a sum, not a
re-render; the final text is counted once more as a whole, and if a tokenizer
counts the whole above the sum of its parts, planning resumes against a tighter
target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from agentdebug.schema import AgentTrajectory
from agentdebug.tokens import count_tokens
from agentdebug.views._render import (
    body_size,
    cut_middle,
    render_coarse,
    render_full,
    render_medium,
)
from agentdebug.views._steps import Granularity, Step, is_decision, steps_of

FULL, MEDIUM, COARSE = Granularity.FULL, Granularity.MEDIUM, Granularity.COARSE
LEGEND = "[…] full · ~ summary · - one line · » collapsed"
#: Without focus, no single step may take more than this share of the budget once
#: the whole trace does not fit: a 50K-character page dump should not push thirty
#: other steps out of full view.
STEP_SHARE = 8
_MIN_STEP_CHARS = 2000
_DONE = object()


@dataclass(frozen=True)
class TraceView:
    """A rendered view: the text for the prompt and what it shows of each step."""

    text: str
    tokens: int
    granularity: dict[int, Granularity]
    """Per step index; a collapsed step counts as COARSE (see ``collapsed_steps``)."""
    truncated_steps: tuple[int, ...]
    """FULL steps whose content was cut (head and tail kept)."""
    budget_tokens: int
    collapsed_steps: tuple[int, ...] = ()
    """Steps folded into a ``» steps a–b: …`` line."""


_Move = tuple[str, int, Any]
"""("cap", step, chars), ("gran", step, granularity), ("collapse", step, None) or
("hide", step, None): one small loss of detail (positions, not step indices)."""


@dataclass
class _Plan:
    gran: list[Granularity]
    caps: list[int | None]
    collapsed: list[bool]
    hidden: list[bool]  # error line of a collapsed step left out

    def copy(self) -> _Plan:
        return _Plan(list(self.gran), list(self.caps), list(self.collapsed), list(self.hidden))

    def apply(self, move: _Move) -> None:
        kind, i, value = move
        if kind == "cap":
            self.caps[i] = value
        elif kind == "gran":
            self.gran[i], self.caps[i] = value, None
        elif kind == "collapse":
            self.collapsed[i] = True
        else:
            self.hidden[i] = True


class _Planner:
    def __init__(
        self,
        steps: Sequence[Step],
        header: str | None,
        budget: int,
        counter: Callable[[str], int],
    ) -> None:
        self.steps = list(steps)
        self.budget = budget
        self.target = budget
        self.count = counter
        self.header = header
        self._texts: dict[tuple[int, Granularity, int | None], tuple[str, int]] = {}
        self._costs: dict[tuple[int, Granularity, int | None], int] = {}
        self._runs: dict[tuple[int, int, tuple[bool, ...]], tuple[str, int]] = {}
        self._bodies: dict[int, int] = {}
        self.header_cost = counter(header + "\n") if header is not None else 0

    # -- pieces ---------------------------------------------------------------------

    def body(self, i: int) -> int:
        if i not in self._bodies:
            self._bodies[i] = body_size(self.steps[i])
        return self._bodies[i]

    def piece(self, i: int, gran: Granularity, cap: int | None) -> tuple[str, int]:
        if gran is not FULL or (cap is not None and cap >= self.body(i)):
            cap = None
        key = (i, gran, cap)
        if key not in self._texts:
            step = self.steps[i]
            if gran is FULL:
                text, omitted = render_full(step, cap)
                self._texts[key] = (text + "\n", omitted)
            elif gran is MEDIUM:
                self._texts[key] = (render_medium(step), 0)
            else:
                self._texts[key] = (render_coarse(step), 0)
            self._costs[key] = self.count(self._texts[key][0] + "\n")
        return self._texts[key]

    def cost(self, i: int, gran: Granularity, cap: int | None) -> int:
        self.piece(i, gran, cap)
        if gran is not FULL or (cap is not None and cap >= self.body(i)):
            cap = None
        return self._costs[(i, gran, cap)]

    def run(self, start: int, end: int, plan: _Plan) -> tuple[str, int]:
        """Steps ``start..end`` (positions, inclusive) folded into one line, plus the
        coarse lines of their errors."""
        hidden = tuple(plan.hidden[start : end + 1])
        key = (start, end, hidden)
        if key not in self._runs:
            run = self.steps[start : end + 1]
            first, last = run[0].index, run[-1].index
            where = f"step {first}" if first == last else f"steps {first}–{last}"
            line = f"» {where}: {len(run)} step{'s' if len(run) > 1 else ''} collapsed"
            agents = list(dict.fromkeys(s.agent for s in run if s.agent))
            if agents:
                more = f" and {len(agents) - 6} more" if len(agents) > 6 else ""
                line += f", agents {', '.join(agents[:6])}{more}"
            failed = [(s, h) for s, h in zip(run, hidden, strict=True) if s.errors]
            shown = [s for s, h in failed if not h]
            if failed:
                line += f"; {len(failed)} error{'s' if len(failed) > 1 else ''}"
                line += (
                    f" ({len(failed) - len(shown)} not shown)" if len(shown) < len(failed) else ":"
                )
            text = "\n".join([line, *("  " + render_coarse(s) for s in shown)])
            self._runs[key] = (text, self.count(text + "\n"))
        return self._runs[key]

    # -- whole views ----------------------------------------------------------------

    def items(self, plan: _Plan) -> Iterator[tuple[str, int]]:
        i = 0
        n = len(self.steps)
        while i < n:
            if plan.collapsed[i]:
                j = i
                while j + 1 < n and plan.collapsed[j + 1]:
                    j += 1
                yield self.run(i, j, plan)
                i = j + 1
                continue
            text, _ = self.piece(i, plan.gran[i], plan.caps[i])
            yield text, self.cost(i, plan.gran[i], plan.caps[i])
            i += 1

    def approx(self, plan: _Plan) -> int:
        return self.header_cost + sum(cost for _, cost in self.items(plan))

    def text(self, plan: _Plan) -> str:
        parts = [self.header] if self.header is not None else []
        parts += [text for text, _ in self.items(plan)]
        return "\n".join(parts).rstrip("\n") + "\n"

    def fits(self, plan: _Plan) -> bool:
        return self.approx(plan) <= self.target

    def chars_per_token(self, positions: Iterable[int]) -> float:
        chars = tokens = 0
        for i in positions:
            text, _ = self.piece(i, FULL, None)
            chars += len(text)
            tokens += self.cost(i, FULL, None)
        return chars / tokens if tokens and chars else 4.0

    # -- moves ----------------------------------------------------------------------

    def step_cap(self) -> int:
        """What one step's content may take once the whole does not fit: a share of
        the budget, so that one page dump does not push every other step out."""
        per_step = self.target * self.chars_per_token(range(len(self.steps))) / STEP_SHARE
        return max(_MIN_STEP_CHARS, int(per_step))

    def caps(self, positions: Iterable[int]) -> list[_Move]:
        """Cap the steps longer than :meth:`step_cap`, the longest first."""
        cap = self.step_cap()
        long = [i for i in positions if self.body(i) > cap]
        return [("cap", i, cap) for i in sorted(long, key=lambda i: (-self.body(i), i))]

    def focus_moves(self, focus: Sequence[int], radius: int) -> list[_Move]:
        """Every step starts in full; the steps far from the focus lose detail first
        (a level at a time: medium, then one line), then the near ones (the
        ``radius`` steps before a focus step and the one after it), then both are
        folded. Within each level errors go last, so a failed step keeps its detail
        while anything else can give way."""
        n = len(self.steps)
        distance = [min(abs(i - f) for f in focus) for i in range(n)]
        near_set = {i for f in focus for i in range(max(0, f - radius), min(n, f + 2))} - set(focus)

        def order(positions: Iterable[int]) -> list[int]:
            return sorted(positions, key=lambda i: (bool(self.steps[i].errors), -distance[i], i))

        rest = [i for i in range(n) if distance[i] > 0]
        far = order(i for i in rest if i not in near_set)
        near = order(near_set)
        moves = self.caps(rest)
        moves += [("gran", i, MEDIUM) for i in far]
        moves += [("gran", i, COARSE) for i in far]
        moves += [("gran", i, MEDIUM) for i in near]
        moves += [("collapse", i, None) for i in far]
        moves += [("gran", i, COARSE) for i in near]
        moves += [("collapse", i, None) for i in near]
        return moves

    def overview_moves(self) -> list[_Move]:
        """Every step starts in full; the oldest lose detail first (medium, one line,
        folded), except the run's first error, which goes last at every level;
        then the error lines of folded steps go, the newest first, never the first."""
        n = len(self.steps)
        errors = [i for i in range(n) if self.steps[i].errors]
        first = errors[0] if errors else None
        order = [i for i in range(n) if i != first] + ([first] if first is not None else [])
        moves = self.caps(range(n))
        moves += [("gran", i, MEDIUM) for i in order]
        moves += [("gran", i, COARSE) for i in order]
        moves += [("collapse", i, None) for i in order]
        moves += [("hide", i, None) for i in reversed(errors[1:])]
        return moves

    def truncate(self, plan: _Plan, focus: Sequence[int]) -> Iterator[None]:
        """Cut the focus steps to one shared cap on their content (short steps stay
        whole), the largest cap that fits; again, tighter, each time it is resumed."""
        while True:
            top = max((self.body(i) for i in focus), default=0)
            lo, hi, best = 0, top, -1
            while lo <= hi:
                mid = (lo + hi) // 2
                for i in focus:
                    plan.caps[i] = mid
                if self.fits(plan):
                    best, lo = mid, mid + 1
                else:
                    hi = mid - 1
            for i in focus:
                plan.caps[i] = max(best, 0)
            if best < 0:
                return
            yield

    def hide_errors(self, plan: _Plan, focus: Sequence[int]) -> Iterator[None]:
        """The error lines of folded steps, farthest from the focus first; the view's
        first error keeps its line."""
        errors = [i for i in range(len(self.steps)) if self.steps[i].errors]
        distance = {i: min(abs(i - f) for f in focus) for i in errors}
        for i in sorted(errors[1:], key=lambda i: (-distance[i], -i)):
            if plan.collapsed[i]:
                plan.hidden[i] = True
                yield

    # -- fitting ----------------------------------------------------------------------

    def settle(self, start: _Plan, moves: Sequence[_Move]) -> tuple[_Plan, bool]:
        """The plan after the fewest of ``moves`` (in order) that fits the target,
        found by bisection; with every move made, and False, when none does."""

        def after(k: int) -> _Plan:
            plan = start.copy()
            for move in moves[:k]:
                plan.apply(move)
            return plan

        plan = after(0)
        if self.fits(plan):
            return plan, True
        lo, hi = 1, len(moves)
        last = after(hi)
        if not self.fits(last):
            return last, False
        while lo < hi:
            mid = (lo + hi) // 2
            if self.fits(after(mid)):
                hi = mid
            else:
                lo = mid + 1
        return after(hi), True

    def fit(
        self, start: _Plan, moves: Sequence[_Move], focus: Sequence[int]
    ) -> tuple[_Plan, str, int]:
        """The most detailed plan that fits the budget: the fewest level moves, then
        (with focus) the focus steps cut, then error lines of folded steps left out,
        then the focus cut further."""
        while True:
            plan, fits = self.settle(start, moves)
            if not fits:
                break
            text = self.text(plan)
            tokens = self.count(text)
            if tokens <= self.budget:
                return plan, text, tokens
            self.target -= tokens - self.budget  # the whole counts more than its parts
        if not focus:
            raise self.too_small(plan, focus)
        rest = chain(
            self.truncate(plan, focus), self.hide_errors(plan, focus), self.truncate(plan, focus)
        )
        while True:
            if self.fits(plan):
                text = self.text(plan)
                tokens = self.count(text)
                if tokens <= self.budget:
                    return plan, text, tokens
                self.target -= tokens - self.budget
            if next(rest, _DONE) is _DONE:
                raise self.too_small(plan, focus)

    def too_small(self, plan: _Plan, focus: Sequence[int]) -> ValueError:
        need = self.approx(plan)
        what = (
            f"the header and the headers of the {len(focus)} focus step(s)"
            if focus
            else "the header and one line for all steps"
        )
        return ValueError(
            f"budget_tokens={self.budget} is too small: {what} alone need about {need} tokens "
            f"(the trace header: {self.header_cost}); raise the budget"
            + (" or focus on fewer steps" if len(focus) > 1 else "")
        )


# characters of a run's failure reason a view's header shows (the middle cut)
REASON_CHARS = 2_000


def _how_it_failed(trajectory: AgentTrajectory) -> str:
    """The outcome's reason on one line, with the error the run raised where the
    reason does not give its message ("the graph raised KeyError" says which
    exception, not which key)."""
    outcome = trajectory.outcome
    if outcome is None:
        return ""
    said = " ".join((outcome.reason or "").split())
    error = outcome.error
    message = " ".join(error.message.split()) if error is not None else ""
    if message and message not in said:
        raised = f"{error.type}: {message}" if error is not None and error.type else message
        said = f"{said} ({raised})" if said else raised
    return said


def _header(
    trajectory: AgentTrajectory, steps: Sequence[Step], every: Sequence[Step], goal_chars: int
) -> str:
    # No run id here: it would tell a model which benchmark file it reads.
    lines = ["### TRACE" + (f" · {trajectory.framework}" if trajectory.framework else "")]
    if trajectory.goal:
        lines.append("GOAL: " + cut_middle(trajectory.goal.strip(), goal_chars)[0])
    names = trajectory.agent_names()
    acting = {e.agent_name for e in trajectory.events if is_decision(e)}
    speaking = {e.agent_name for e in trajectory.events}
    others = [n for n in names if n in speaking and n not in acting]
    agents = [n for n in names if n not in others]
    if agents:
        lines.append("AGENTS: " + ", ".join(agents))
    if others:  # (not agents a model may blame: the schema leaves them out too)
        lines.append("INPUT AND TOOL OUTPUT ONLY, NOT AGENTS: " + ", ".join(others))
    if trajectory.reference_answer is not None:
        lines.append("REFERENCE ANSWER: " + cut_middle(trajectory.reference_answer, goal_chars)[0])
    said = _how_it_failed(trajectory)
    if said:  # (what the user's check or the error said went wrong: a model asked what
        # failed is told what the failure was; on one line, so that a reason cannot
        # read as a header or a step of the view, and kept short)
        lines.append("HOW IT FAILED: " + cut_middle(said, min(goal_chars, REASON_CHARS))[0])
    first, last = steps[0].index, steps[-1].index
    if len(steps) < len(every):
        where = f"{first}–{last} (a window of steps {every[0].index}–{every[-1].index})"
    else:
        where = f"{first}–{last}"
    lines.append(f"### STEPS {where}, {len(steps)} in view ({LEGEND})")
    return "\n".join(lines)


def _view(
    trajectory: AgentTrajectory,
    steps: Sequence[Step],
    every: Sequence[Step],
    *,
    focus: Iterable[int],
    budget_tokens: int,
    medium_radius: int,
    header: bool,
    counter: Callable[[str], int] | None,
) -> TraceView:
    if budget_tokens <= 0:
        raise ValueError(f"budget_tokens must be positive, got {budget_tokens}")
    if medium_radius < 0:
        raise ValueError(f"medium_radius must be 0 or more, got {medium_radius}")
    if not steps:
        raise ValueError(f"trajectory {trajectory.id!r} has no steps to show in this view")
    count = counter or count_tokens
    position = {s.index: i for i, s in enumerate(steps)}
    wanted = sorted(set(focus))
    missing = [f for f in wanted if f not in position]
    if missing:
        raise ValueError(
            f"focus step(s) {missing} not in the view of trajectory {trajectory.id!r} "
            f"(its steps run {steps[0].index}–{steps[-1].index})"
        )
    focus_pos = [position[f] for f in wanted]

    planner = _Planner(steps, None, budget_tokens, count)
    if header:
        ratio = planner.chars_per_token(focus_pos or range(len(steps)))
        goal_chars = max(200, int(budget_tokens * ratio / 4))
        planner.header = _header(trajectory, steps, every, goal_chars)
        planner.header_cost = count(planner.header + "\n")

    n = len(steps)
    start = _Plan([FULL] * n, [None] * n, [False] * n, [False] * n)
    moves = planner.focus_moves(focus_pos, medium_radius) if focus_pos else planner.overview_moves()
    plan, text, tokens = planner.fit(start, moves, focus_pos)
    truncated = tuple(
        steps[i].index
        for i in range(n)
        if plan.gran[i] is FULL
        and not plan.collapsed[i]
        and planner.piece(i, FULL, plan.caps[i])[1] > 0
    )
    return TraceView(
        text=text,
        tokens=tokens,
        granularity={s.index: plan.gran[i] for i, s in enumerate(steps)},
        truncated_steps=truncated,
        budget_tokens=budget_tokens,
        collapsed_steps=tuple(s.index for i, s in enumerate(steps) if plan.collapsed[i]),
    )


def build_view(
    trajectory: AgentTrajectory,
    *,
    focus: Iterable[int] = (),
    budget_tokens: int = 32_000,
    medium_radius: int = 2,
    header: bool = True,
    counter: Callable[[str], int] | None = None,
) -> TraceView:
    """The trajectory as text of at most ``budget_tokens`` tokens.

    Every step is FULL when the whole fits. When it does not, detail goes step by
    step, only as much as the budget needs. With focus steps (step indices): long
    non-focus steps are capped first (a share of the budget each), then the steps
    farthest from the focus go MEDIUM, then COARSE, then the near ones (the
    ``medium_radius`` steps before each focus step and the one after) go MEDIUM;
    then far and near steps are folded into ``» steps a–b`` lines; only then is the
    focus steps' content cut (head and tail kept, never a focus step dropped). A
    failed step gives way last at each level. Without focus the oldest steps lose
    detail first, the run's first error last. Errors keep their own line in a
    folded range while room allows, and the view's first error always does. The
    header gives the goal, the agents, and the reference answer only when the
    trajectory carries one.

    Raises ValueError when the budget cannot hold even the header and the focus
    steps' headers, or a focus step is not in the trajectory.
    """
    every = steps_of(trajectory)
    return _view(
        trajectory,
        every,
        every,
        focus=focus,
        budget_tokens=budget_tokens,
        medium_radius=medium_radius,
        header=header,
        counter=counter,
    )


def window(
    trajectory: AgentTrajectory,
    start: int,
    end: int,
    *,
    budget_tokens: int,
    focus: Iterable[int] = (),
    medium_radius: int = 2,
    header: bool = True,
    counter: Callable[[str], int] | None = None,
) -> TraceView:
    """Steps ``start``..``end`` (step indices, inclusive) only, by the rules of
    :func:`build_view`; an LLM call's input still omits what the agent's previous
    call (even one before the window) already had, and says at which step."""
    if end < start:
        raise ValueError(f"window end {end} is before its start {start}")
    every = steps_of(trajectory)
    inside = [s for s in every if start <= s.index <= end]
    if not inside:
        raise ValueError(f"no steps of trajectory {trajectory.id!r} in the window {start}–{end}")
    return _view(
        trajectory,
        inside,
        every,
        focus=focus,
        budget_tokens=budget_tokens,
        medium_radius=medium_radius,
        header=header,
        counter=counter,
    )
