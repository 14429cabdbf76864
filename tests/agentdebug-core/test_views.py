"""Views: a trajectory as prompt text that fits a token budget and keeps the evidence."""

from __future__ import annotations

import re
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from agentdebug.io import import_file
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.stages import ImportedRun
from agentdebug.tokens import count_tokens
from agentdebug.views import Granularity, Step, build_view, render_step, steps_of, window

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
WHOWHEN = DATA / "whowhen"
TRAIL = DATA / "trail" / "gaia" / "traces"
FULL, MEDIUM, COARSE = Granularity.FULL, Granularity.MEDIUM, Granularity.COARSE

needs_data = pytest.mark.skipif(
    not (WHOWHEN.is_dir() and TRAIL.is_dir()), reason=f"benchmark data not found at {DATA}"
)


@cache
def _run(path: Path) -> ImportedRun:
    return import_file(path)[0]


def _whowhen(subset: str) -> list[Path]:
    return sorted((WHOWHEN / subset).glob("*.json"), key=lambda p: int(p.stem))


def _trail() -> list[Path]:
    return sorted(TRAIL.glob("*.json"))


def _event(i: int, text: str, **fields: Any) -> AgentEvent:
    fields.setdefault("type", EventType.MESSAGE)
    fields.setdefault("agent_name", "Planner" if i % 2 else "Coder")
    return AgentEvent(id=f"e{i}", step_index=i, output=text, **fields)


def _trajectory(
    n: int = 30, *, texts: dict[int, str] | None = None, **fields: Any
) -> AgentTrajectory:
    texts = texts or {}
    events = [
        _event(
            i,
            texts.get(
                i,
                f"Step {i}: I checked record {i * 7} in report_{i}.csv at "
                f"https://example.org/records/{i}. Next, I will compare it with Record {i + 1}.",
            ),
        )
        for i in range(n)
    ]
    fields.setdefault("goal", "Count the records that changed in 2023.")
    return AgentTrajectory(id="hand-built", events=events, **fields)


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- granularity rules -----------------------------------------------------------------


def _rank(view: Any, i: int) -> int:
    """Detail shown of step i: 3 full, 2 medium, 1 one line, 0 folded."""
    if i in view.collapsed_steps:
        return 0
    return {FULL: 3, MEDIUM: 2, COARSE: 1}[view.granularity[i]]


def test_a_focused_view_that_fits_shows_every_step_in_full() -> None:
    """Focus decides what gives way, not what is shown when there is room: a run
    that fits the budget is shown whole (before, every step but the focus was cut
    to one line however much room was left)."""
    t = _trajectory(30)
    view = build_view(t, focus=[10, 20], budget_tokens=32_000)
    assert set(view.granularity.values()) == {FULL}
    assert view.truncated_steps == () and view.collapsed_steps == ()
    for event in t.events:
        assert event.output in view.text
    assert view.tokens == count_tokens(view.text) <= 32_000


def test_a_focused_view_shortens_far_steps_first_and_only_as_needed() -> None:
    texts = {i: f"Step {i} log line. " * 200 for i in range(30)}
    t = _trajectory(30, texts=texts)
    whole = build_view(t, focus=[10, 20], budget_tokens=64_000).tokens
    budget = whole * 2 // 3
    view = build_view(t, focus=[10, 20], budget_tokens=budget)
    assert view.tokens <= budget
    assert view.granularity[10] is FULL and view.granularity[20] is FULL
    assert texts[10] in view.text and texts[20] in view.text
    near = (8, 9, 11, 18, 19, 21)
    far = [i for i in range(30) if i not in (10, 20, *near)]
    assert min(_rank(view, i) for i in near) >= max(_rank(view, i) for i in far)
    distance = {i: min(abs(i - 10), abs(i - 20)) for i in far}
    for i in far:
        for j in far:
            if distance[i] < distance[j]:
                assert _rank(view, i) >= _rank(view, j), (i, j)
    # the room left is used: far steps are still shown in full, and one step more
    # in full would not have fitted
    assert sum(_rank(view, i) == 3 for i in far) >= 5
    assert any(_rank(view, i) < 3 for i in far)
    assert view.tokens > budget - count_tokens(texts[0])
    narrow = build_view(t, focus=[10], medium_radius=0, budget_tokens=whole // 4)
    assert _rank(narrow, 11) >= max(_rank(narrow, i) for i in (9, 12))


def test_without_focus_everything_is_full_when_it_fits() -> None:
    t = _trajectory(12)
    view = build_view(t, budget_tokens=32_000)
    assert set(view.granularity.values()) == {FULL}
    for event in t.events:
        assert event.output in view.text


def test_without_focus_the_oldest_steps_lose_detail_first() -> None:
    texts = {i: f"Step {i} log line. " * 200 for i in range(40)}
    view = build_view(_trajectory(40, texts=texts), budget_tokens=6_000)
    assert view.tokens <= 6_000
    rank = {COARSE: 0, MEDIUM: 1, FULL: 2}
    levels = [rank[view.granularity[i]] for i in range(40)]
    assert levels == sorted(levels)  # never more detail on an older step
    assert levels[0] < levels[-1]
    assert view.granularity[39] is FULL


def test_focus_must_name_a_step_of_the_view() -> None:
    with pytest.raises(ValueError, match=r"focus step\(s\) \[99\] not in the view"):
        build_view(_trajectory(10), focus=[99])
    with pytest.raises(ValueError, match="not in the view"):
        window(_trajectory(10), 0, 4, budget_tokens=8_000, focus=[7])


# -- budgets, truncation, errors -------------------------------------------------------


def test_budget_is_counted_with_the_given_counter() -> None:
    calls = 0

    def words(text: str) -> int:
        nonlocal calls
        calls += 1
        return len(text.split())

    t = _trajectory(60)
    view = build_view(t, focus=[30], budget_tokens=400, counter=words)
    assert calls > 0
    assert view.tokens == words(view.text) <= 400
    assert count_tokens(view.text) > 400  # the default counter would not have allowed it
    assert view.granularity[30] is FULL
    assert t.events[30].output in view.text


def test_render_full_cuts_long_bodies_keeping_head_and_tail() -> None:
    body = "HEAD: the agent opened the file. " + "filler " * 10_000 + "TAIL: the total is 4217."
    step = steps_of(_trajectory(1, texts={0: body}))[0]
    whole = render_step(step, FULL)
    assert whole.endswith(body)
    cut = render_step(step, FULL, max_chars=2_000)
    assert len(cut) < 2_100
    assert "HEAD: the agent opened the file." in cut
    assert cut.endswith("TAIL: the total is 4217.")
    marker = re.search(r"\n… \[([\d,]+) characters omitted\] …\n", cut)
    assert marker is not None
    kept = len(cut) - len(cut.splitlines()[0]) - 1 - len(marker[0])
    assert int(marker[1].replace(",", "")) + kept == len(body)


def test_focus_step_larger_than_the_budget_is_cut_not_dropped() -> None:
    huge = "BEGIN of the page dump. " + "lorem ipsum " * 40_000 + "END: price is $1,299."
    t = _trajectory(20, texts={7: huge})
    view = build_view(t, focus=[7], budget_tokens=2_000)
    assert view.tokens <= 2_000
    assert view.granularity[7] is FULL
    assert view.truncated_steps == (7,)
    assert "[step 7 · Planner · message · id e7]" in view.text
    assert "BEGIN of the page dump." in view.text and "END: price is $1,299." in view.text
    assert "characters omitted" in view.text


def test_many_focus_steps_share_the_cut_and_short_ones_stay_whole() -> None:
    texts = {i: f"Short step {i} says the answer is {i}." for i in range(10)}
    texts[3] = "long " * 20_000 + "END3"
    texts[6] = "long " * 20_000 + "END6"
    t = _trajectory(10, texts=texts)
    view = build_view(t, focus=range(10), budget_tokens=5_000)
    assert view.tokens <= 5_000
    assert set(view.truncated_steps) == {3, 6}
    for i in (0, 1, 2, 4, 5, 7, 8, 9):
        assert texts[i] in view.text
    assert "END3" in view.text and "END6" in view.text


def test_impossible_budget_raises_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"budget_tokens=10 is too small: .*focus step"):
        build_view(_trajectory(30), focus=[4], budget_tokens=10)
    with pytest.raises(ValueError, match=r"budget_tokens=10 is too small"):
        build_view(_trajectory(30), budget_tokens=10)
    with pytest.raises(ValueError, match="must be positive"):
        build_view(_trajectory(3), budget_tokens=0)


def test_errors_stay_visible_in_a_collapsed_range() -> None:
    events = [
        _event(i, f"Step {i}: routine work on item {i}, nothing to report. " * 5)
        for i in range(200)
    ]
    events[40] = _event(
        40,
        "Running the extractor.",
        type=EventType.TOOL_RESULT,
        error={"type": "KeyError", "message": "KeyError: 'Street Address' column missing"},
    )
    t = AgentTrajectory(id="errors", goal="Count addresses.", events=events)
    view = build_view(t, focus=[190], budget_tokens=1_500)
    assert view.tokens <= 1_500
    assert 39 in view.collapsed_steps
    assert "KeyError: 'Street Address' column missing" in view.text
    overview = build_view(t, budget_tokens=1_500)
    assert "KeyError: 'Street Address' column missing" in overview.text
    tiny = build_view(t, focus=[190], budget_tokens=250)
    assert 40 in tiny.collapsed_steps
    assert re.search(r"» steps \d+–\d+: \d+ steps collapsed, agents .*; 1 error:", tiny.text)
    assert "KeyError: 'Street Address' column missing" in tiny.text


def test_the_first_error_is_never_left_out_of_a_short_view() -> None:
    """A view too small for every error line leaves out later ones and keeps the
    first error's (before: the oldest error lines went first, the first among them)."""
    events = [_event(i, f"Step {i}: routine work on item {i}. " * 20) for i in range(60)]
    for k, i in enumerate(range(5, 60, 5)):
        events[i] = _event(
            i,
            "Calling the service.",
            type=EventType.TOOL_RESULT,
            error={"type": f"Fault{k}", "message": f"Fault{k}: the service refused item {i}"},
        )
    t = AgentTrajectory(id="errors", goal="Process the items.", events=events)
    for focus in ([], [59]):
        view = build_view(t, focus=focus, budget_tokens=180)
        assert view.tokens <= 180
        hidden = re.search(r"11 errors \((\d+) not shown\)", view.text)
        assert hidden is not None and int(hidden[1]) >= 3, view.text
        assert "Fault0: the service refused item 5" in view.text


# -- header ----------------------------------------------------------------------------


def test_reference_answer_only_when_the_trajectory_carries_one() -> None:
    t = _trajectory(5, reference_answer="42 records")
    view = build_view(t, budget_tokens=8_000)
    assert "REFERENCE ANSWER: 42 records" in view.text
    assert "GOAL: Count the records that changed in 2023." in view.text
    assert "AGENTS: Coder, Planner" in view.text
    stripped = build_view(t.model_copy(update={"reference_answer": None}), budget_tokens=8_000)
    assert "REFERENCE ANSWER" not in stripped.text and "42 records" not in stripped.text
    bare = build_view(t, budget_tokens=8_000, header=False)
    assert "GOAL:" not in bare.text and bare.text.startswith("[step 0 ")


def test_views_are_deterministic() -> None:
    t = _trajectory(80, reference_answer="x")
    first = build_view(t, focus=[40], budget_tokens=1_200)
    again = build_view(t, focus=[40], budget_tokens=1_200)
    assert first == again


# -- windows ---------------------------------------------------------------------------


def test_window_shows_only_its_range() -> None:
    t = _trajectory(30)
    view = window(t, 10, 14, budget_tokens=8_000, focus=[12])
    assert sorted(view.granularity) == [10, 11, 12, 13, 14]
    assert view.granularity[12] is FULL
    steps_shown = {int(m) for m in re.findall(r"step (\d+) ·", view.text)}
    assert steps_shown == {10, 11, 12, 13, 14}
    assert "### STEPS 10–14 (a window of steps 0–29)" in view.text
    assert set(window(t, 0, 3, budget_tokens=8_000).granularity.values()) == {FULL}
    with pytest.raises(ValueError, match="no steps"):
        window(t, 50, 60, budget_tokens=8_000)


# -- rendering of single steps ---------------------------------------------------------


def test_medium_and_coarse_say_intent_action_and_result() -> None:
    call = AgentEvent(
        id="t1",
        type=EventType.TOOL_CALL,
        step_index=3,
        agent_name="search_agent",
        input={"args": [], "kwargs": {"query": "BBC Earth silliest animals"}},
        output="Found 6 results. 1. Top 5 Silliest Animal Moments https://youtu.be/abc",
        metadata={"tool_name": "web_search"},
    )
    step = Step(index=3, agent="search_agent", events=(call,))
    medium = render_step(step, MEDIUM).splitlines()
    assert medium[0] == "~ step 3 · search_agent · tool.call web_search · id t1"
    assert medium[1] == '  action: web_search({"query":"BBC Earth silliest animals"})'
    assert medium[2].startswith("  result: Found 6 results.")
    coarse = render_step(step, COARSE)
    assert "\n" not in coarse and coarse.startswith(
        "- step 3 · search_agent · tool.call web_search · ok"
    )
    assert "https://youtu.be/abc" in coarse
    failed = Step(
        index=4,
        agent="a",
        events=(
            AgentEvent(
                id="x",
                type=EventType.TOOL_CALL,
                step_index=4,
                input={"path": "data.xlsx"},
                error={"type": "FileNotFoundError", "message": "no such file: data.xlsx"},
            ),
        ),
    )
    assert "result: ERROR: FileNotFoundError: no such file: data.xlsx" in render_step(
        failed, MEDIUM
    )
    assert "· ERROR FileNotFoundError: no such file: data.xlsx" in render_step(failed, COARSE)
    full = render_step(failed, FULL)
    assert (
        'input:\n{"path":"data.xlsx"}' in full and "ERROR:\nFileNotFoundError: no such file" in full
    )


def test_coarse_line_keeps_entities_and_the_open_commitment() -> None:
    text = (
        'I opened "Annual Report 2023" from https://example.org/r.pdf and found 1,284 rows '
        "for Acme Corporation. Next, I will filter the rows by region."
    )
    line = render_step(steps_of(_trajectory(1, texts={0: text}))[0], COARSE)
    assert len(line) <= 160
    for piece in ("https://example.org/r.pdf", '"Annual Report 2023"', "1,284", "Acme Corporation"):
        assert piece in line
    assert line.endswith("next: Next, I will filter the rows by region.")


def test_llm_call_without_context_shows_its_last_two_messages() -> None:
    messages = [{"role": "system", "content": "SYSTEM PROMPT"}] + [
        {"role": "user", "content": f"message {i}"} for i in range(5)
    ]
    event = AgentEvent(id="l", type=EventType.LLM_CALL, step_index=0, input=messages, output="ok")
    text = render_step(Step(index=0, agent=None, events=(event,)), FULL)
    assert "SYSTEM PROMPT" not in text and "message 2" not in text
    assert "[user] message 3\n[user] message 4" in text
    assert "input (2 new messages; 4 earlier messages not shown):" in text


# -- real traces -----------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("subset", ["Hand-Crafted", "Algorithm-Generated"])
def test_gold_mistake_step_is_full_and_verbatim_at_32k(subset: str) -> None:
    for path in _whowhen(subset)[:12]:
        run = _run(path)
        gold = run.label.step_index if run.label else None
        assert gold is not None
        t = run.trajectory
        view = build_view(t, focus=[gold], budget_tokens=32_000)
        assert view.tokens <= 32_000
        assert view.granularity[gold] is FULL
        event = t.events[gold]
        if count_tokens(event.output) < 24_000:
            assert event.output in view.text, path
        if build_view(t, budget_tokens=32_000).granularity == {
            i: FULL for i in view.granularity
        }:  # the whole run fits: it is shown whole, focus or not
            assert set(view.granularity.values()) == {FULL}, path
        else:
            assert view.tokens > 30_000, path  # what does not fit is shortened, no more


@needs_data
def test_medium_and_coarse_renderings_stay_short_on_real_steps() -> None:
    paths = _whowhen("Hand-Crafted")[:5] + _whowhen("Algorithm-Generated")[:10] + _trail()[:5]
    for path in paths:
        for step in steps_of(_run(path).trajectory):
            medium = render_step(step, MEDIUM).splitlines()
            assert 1 <= len(medium) <= 4 and all(len(line) <= 230 for line in medium), medium
            coarse = render_step(step, COARSE)
            assert "\n" not in coarse
            assert len(coarse) <= (275 if step.errors else 170), coarse


@needs_data
def test_trail_view_is_much_smaller_than_the_raw_trace_and_keeps_the_final_answer() -> None:
    path = max(_trail(), key=lambda p: p.stat().st_size)
    t = _run(path).trajectory
    view = build_view(t, budget_tokens=32_000)
    assert view.tokens <= 32_000
    assert len(view.text) * 3 < path.stat().st_size
    final = [e for e in t.events if e.type is EventType.LLM_CALL][-1]
    assert isinstance(final.output, str) and final.output in view.text
    assert "earlier messages omitted, the same as the input of" in view.text


@needs_data
def test_trail_llm_call_shows_only_the_messages_its_agent_had_not_sent() -> None:
    t = _run(max(_trail(), key=lambda p: p.stat().st_size)).trajectory
    steps = steps_of(t)
    found = 0
    for step in steps:
        for event in step.events:
            shared, previous = step.seen_inputs.get(event.id, (0, None))
            if event.type is not EventType.LLM_CALL or not shared:
                continue
            found += 1
            text = render_step(step, FULL)
            assert f"{shared} earlier messages omitted" in text and f"at step {previous}" in text
            system = event.input[0]["content"]
            assert system not in text  # the repeated system prompt
            last = event.input[-1]["content"]
            assert _flat(last)[:200] in _flat(text)
    assert found >= 2


@needs_data
@pytest.mark.slow
def test_every_benchmark_trace_fits_32k_and_8k() -> None:
    paths = _whowhen("Algorithm-Generated") + _whowhen("Hand-Crafted") + _trail()
    runs = [_run(p) for p in paths]
    assert len(runs) == 155 + 72
    timings: dict[int, float] = {}
    for budget in (32_000, 8_000):
        start = time.perf_counter()
        for path, run in zip(paths, runs, strict=True):
            t = run.trajectory
            gold = run.label.step_index if run.label else None
            focus = [gold] if gold is not None else [t.steps()[len(t.steps()) // 2]]
            for f in (focus, []):
                view = build_view(t, focus=f, budget_tokens=budget)
                assert view.tokens == count_tokens(view.text) <= budget, (path, budget)
                for i in f:
                    assert view.granularity[i] is FULL
                    assert f"[step {i} " in view.text
                for step in steps_of(t):
                    for e in step.errors:
                        assert e.error is not None
                        assert _flat(e.error.message)[:40] in _flat(view.text), (path, step.index)
        timings[budget] = time.perf_counter() - start
    print(
        f"\nviews of {len(runs)} traces, focus and overview: "
        + ", ".join(f"{b // 1000}K {s:.2f}s" for b, s in timings.items())
    )  # a figure, not a target: speed targets live in benchmarks/


def test_render_step_accepts_granularity_names() -> None:
    step = steps_of(_trajectory(3))[1]
    assert render_step(step, "medium") == render_step(step, MEDIUM)  # type: ignore[arg-type]
    assert render_step(step, COARSE, max_chars=40).count("characters omitted") == 1
