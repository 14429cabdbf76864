"""A whole trajectory (or a range of it) as one text that fits a token budget.

The planner starts from the granularity the rules give each step and degrades it
one small move at a time until the view fits: with focus steps, the steps farthest
from the focus go first; without, the oldest. Renders and token counts are cached
per step, so a move costs a sum, not a re-render; the final text is counted once
more as a whole, and if a tokenizer counts the whole above the sum of its parts,
planning resumes against a tighter target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from agentdebug.schema import AgentTrajectory
from agentdebug.tokens import count_tokens
from agentdebug.views._render import (
    body_size,
    cut_middle,
    render_coarse,
    render_full,
    render_medium,
)
from agentdebug.views._steps import Granularity, Step, steps_of

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


@dataclass
class _Plan:
    gran: list[Granularity]
    caps: list[int | None]
    collapsed: list[bool]
    hidden: list[bool]  # error line of a collapsed step left out


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

    def focus_moves(self, plan: _Plan, focus: Sequence[int]) -> Iterator[None]:
        n = len(self.steps)
        distance = [min(abs(i - f) for f in focus) for i in range(n)]
        farthest = sorted(range(n), key=lambda i: (-distance[i], i))
        for i in farthest:
            if plan.gran[i] is COARSE and not plan.collapsed[i]:
                plan.collapsed[i] = True
                yield
        medium = [i for i in farthest if plan.gran[i] is MEDIUM]
        for i in medium:
            plan.gran[i] = COARSE
            yield
        for i in medium:
            plan.collapsed[i] = True
            yield
        yield from self.truncate(plan, focus)
        for i in farthest:
            if self.steps[i].errors and plan.collapsed[i]:
                plan.hidden[i] = True
        yield from self.truncate(plan, focus)

    def overview_moves(self, plan: _Plan) -> Iterator[None]:
        n = len(self.steps)
        per_step = self.target * self.chars_per_token(range(n)) / STEP_SHARE
        cap = max(_MIN_STEP_CHARS, int(per_step))
        if any(self.body(i) > cap for i in range(n)):
            plan.caps = [cap] * n
            yield
        for i in range(n):
            plan.gran[i], plan.caps[i] = MEDIUM, None
            yield
        for i in range(n):
            plan.gran[i] = COARSE
            yield
        for i in range(n):
            plan.collapsed[i] = True
            yield
        for i in range(n):
            if self.steps[i].errors:
                plan.hidden[i] = True
                yield

    def fit(self, plan: _Plan, moves: Iterator[None], focus: Sequence[int]) -> tuple[str, int]:
        while True:
            if self.fits(plan):
                text = self.text(plan)
                tokens = self.count(text)
                if tokens <= self.budget:
                    return text, tokens
                self.target -= tokens - self.budget  # the whole counts more than its parts
            if next(moves, _DONE) is _DONE:
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


def _header(
    trajectory: AgentTrajectory, steps: Sequence[Step], every: Sequence[Step], goal_chars: int
) -> str:
    # No run id here: it would tell a model which benchmark file it reads.
    lines = ["### TRACE" + (f" · {trajectory.framework}" if trajectory.framework else "")]
    if trajectory.goal:
        lines.append("GOAL: " + cut_middle(trajectory.goal.strip(), goal_chars)[0])
    agents = trajectory.agent_names()
    if agents:
        lines.append("AGENTS: " + ", ".join(agents))
    if trajectory.reference_answer is not None:
        lines.append("REFERENCE ANSWER: " + cut_middle(trajectory.reference_answer, goal_chars)[0])
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
    plan = _Plan([COARSE] * n, [None] * n, [False] * n, [False] * n)
    if focus_pos:
        for f in focus_pos:
            for i in range(max(0, f - medium_radius), min(n, f + 2)):
                plan.gran[i] = MEDIUM
        for f in focus_pos:
            plan.gran[f] = FULL
        moves = planner.focus_moves(plan, focus_pos)
    else:
        plan.gran = [FULL] * n
        moves = planner.overview_moves(plan)

    text, tokens = planner.fit(plan, moves, focus_pos)
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

    Focus steps (step indices) are FULL, the ``medium_radius`` steps before each
    and the one after MEDIUM, the rest COARSE; when that is too long, the steps
    farthest from the focus are folded into ``» steps a–b`` lines first, then the
    MEDIUM ones, and only then is the focus steps' content cut (head and tail
    kept, never a focus step dropped). Without focus every step is FULL if the
    whole fits; if not, the oldest steps lose detail first (MEDIUM, then COARSE,
    then folded). Errors keep their own line in a folded range while room allows.
    The header gives the goal, the agents, and the reference answer only when the
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
