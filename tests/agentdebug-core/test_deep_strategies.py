"""Error-lifecycle attribution and DeepDebug, stage by stage, through the real
openai client against scripted local servers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agentdebug import plugins
from agentdebug.attribute.deepdebug import DeepDebugAttributor
from agentdebug.attribute.lifecycle import MIN_WINDOW_TOKENS, windows
from agentdebug.attribute.model_common import TraceFacts
from agentdebug.diagnose import diagnose
from agentdebug.llm import LLMSettings
from agentdebug.llm.testing import ScriptedServer
from agentdebug.plugins import Registry, hookimpl, make_plugin_manager
from agentdebug.report import render
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType


def settings_for(server: ScriptedServer) -> LLMSettings:
    return LLMSettings(
        model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0
    )


def text_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


GOAL = "Report the population of Lyon in 2020, in thousands, from the census table."
SAYS = {
    0: "I will open the census table for Lyon.",
    1: "The census table lists Lyon 2020 population as 522,250.",
    2: "I will use the 2019 column because it is complete.",  # E1: wrong year (task says 2020)
    3: "Rounding rule: divide by 100 to get thousands.",  # E2: wrong unit, fixed at 4
    4: "Correction: thousands means divide by 1000. Using Paris data from memory: 2.1 million.",  # fixes E2, opens E3
    5: "Taking the 2019 value 516,092 as agreed earlier.",  # relies on E1
    6: "Note to self: the font in the table is small.",  # E4: harmless slip, latent
    7: "The table footnote mentions a revision.",
    8: "Let me check the footnote.",
    9: "Footnote says values are provisional.",
    10: "Still using the Paris figure for comparison.",
    11: "Dropping the Paris figure; it is not Lyon.",  # resolves E3 late -> costly
}


FILLER = " Working notes: " + "the table has many rows and columns to read " * 80


def lyon(*, filler: bool = True) -> AgentTrajectory:
    """12 steps, long enough (with filler) that lifecycle reads them in several windows."""
    agents = ["reader", "calculator", "writer"]
    return AgentTrajectory(
        id="lyon",
        goal=GOAL,
        events=[
            AgentEvent(
                id=f"e{i}",
                type=EventType.MESSAGE,
                step_index=i,
                agent_name=agents[i % 3],
                output=SAYS[i] + (FILLER if filler else ""),
            )
            for i in range(12)
        ],
    )


def window_of(request: dict[str, Any]) -> tuple[int, int] | None:
    m = re.search(r"Steps\s+(\d+) to (\d+) are shown", text_of(request))
    return (int(m.group(1)), int(m.group(2))) if m else None


# (step, object, wrong quote, reference quote, conflict, fixed at, relied on at)
ERRORS = [
    (2, "census year", "use the 2019 column", "in 2020", "task", None, [5]),  # active
    (3, "unit conversion", "divide by 100", "in thousands", "task", 4, []),  # resolved
    (
        4,
        "city",
        "Using Paris data from memory",
        "Report the population of Lyon",
        "task",
        11,
        [],
    ),  # costly
    (
        6,
        "font",
        "the font in the table is small",
        "open the census table",
        "history",
        None,
        [],
    ),  # latent
    (
        7,
        "footnote",
        "the footnote says to ignore Lyon",
        "Report the population",
        "task",
        None,
        [],
    ),  # invented
]


def lifecycle_script(final_choice: str = "E1") -> Any:
    def script(request: dict[str, Any]) -> str:
        window = window_of(request)
        if window is None:  # the final comparison
            return json.dumps(
                {
                    "error": final_choice,
                    "reason": "it decided the number",
                    "failure_mode": "planning.task_misunderstanding",
                    "fix": "Read the 2020 column, as the task asks.",
                    "confidence": 0.8,
                }
            )
        lo, hi = window
        text = text_of(request)
        open_ids = {
            obj: eid for eid, obj in re.findall(r"^- (E\d+) \(from step \d+, ([^)]+)\)", text, re.M)
        }
        triggers: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for step, obj, wrong, ref, conflict, fixed, relied in ERRORS:
            if lo <= step <= hi:
                triggers.append(
                    {
                        "step": step,
                        "conflict": conflict,
                        "phase": "reason",
                        "object": obj,
                        "continues": None,
                        "wrong_quote": wrong,
                        "reference_quote": ref,
                        "description": f"wrong {obj}",
                        "fixed_at": fixed if fixed is not None and fixed <= hi else None,
                        "relied_on": [r for r in relied if r <= hi],
                    }
                )
            elif step < lo and obj in open_ids:
                if fixed is not None and lo <= fixed <= hi:
                    updates.append(
                        {"error": open_ids[obj], "step": fixed, "status": "resolved", "quote": ""}
                    )
                updates += [
                    {"error": open_ids[obj], "step": r, "status": "relied_on", "quote": ""}
                    for r in relied
                    if lo <= r <= hi
                ]
        return json.dumps({"triggers": triggers, "updates": updates})

    return script


def trigger(step: int, obj: str, wrong: str, ref: str) -> dict[str, Any]:
    return {
        "step": step,
        "conflict": "task",
        "phase": "reason",
        "object": obj,
        "continues": None,
        "wrong_quote": wrong,
        "reference_quote": ref,
        "description": f"wrong {obj}",
    }


def test_windows_are_as_many_as_the_budget_affords() -> None:
    groups = windows(list(range(130)), 27_000)
    assert sum(len(g) for g in groups) == 130
    assert len(groups) == 27_000 // MIN_WINDOW_TOKENS
    assert windows(list(range(3)), 27_000) == [[0, 1], [2]]
    assert windows(list(range(40)), 1_000) == [list(range(40))]


def test_lifecycle_tracks_every_error_and_blames_a_survivor() -> None:
    with ScriptedServer(lifecycle_script("E1")) as server:
        report = diagnose(lyon(), attributor="lifecycle", settings=settings_for(server))
    windows_read = [window_of(r) for r in server.requests if window_of(r) is not None]
    assert len(windows_read) >= 3  # several windows: errors are followed across them
    root = report.root_cause
    assert root is not None and (root.step_index, root.agent_name) == (2, "writer")
    states = {
        i["id"]: (i["object"], i["state"], i["first_step"]) for i in root.metadata["instances"]
    }
    assert states == {
        "E1": ("census year", "active", 2),
        "E2": ("unit conversion", "resolved", 3),
        "E3": ("city", "costly", 4),
        "E4": ("font", "latent", 6),
    }
    details = [a.detail or "" for a in report.audit if a.stage == "lifecycle"]
    assert any(
        "step 7 trigger discarded: the wrong commitment is not in the trace" in d for d in details
    )
    # Then one final call compared the candidates, E1 (active) and E3 (costly).
    finals = [r for r in server.requests if window_of(r) is None]
    assert len(finals) == 1
    final_text = text_of(finals[0])
    assert (
        "E1" in final_text
        and "E3" in final_text
        and "E2:" not in final_text
        and "E4:" not in final_text
    )
    text = render(report, lyon(), "text")
    assert "Error lifecycle (4 instance(s)" in text and "E4 [latent]" in text
    # Both quotes of the blamed trigger are in the evidence, and grounded.
    assert [e.grounded for e in root.evidence] == [True, True]
    # The final call named the mode and a fix that names what the run holds (2020):
    # the report has both (before, lifecycle set no mode and the report no fix).
    assert "failure_mode" in final_text and "planning.task_misunderstanding" in final_text
    assert root.mode_id == "planning.task_misunderstanding"
    assert (
        report.fix is not None and report.fix.directive == "Read the 2020 column, as the task asks."
    )


def test_lifecycle_with_one_candidate_makes_no_final_call() -> None:
    def script(request: dict[str, Any]) -> str:
        lo, hi = window_of(request) or (0, -1)
        triggers = (
            [trigger(2, "census year", "use the 2019 column", "in 2020")] if lo <= 2 <= hi else []
        )
        updates = (
            [{"error": "E1", "step": 5, "status": "relied_on", "quote": ""}]
            if lo <= 5 <= hi
            else []
        )
        return json.dumps({"triggers": triggers, "updates": updates})

    with ScriptedServer(script) as server:
        report = diagnose(lyon(), attributor="lifecycle", settings=settings_for(server))
    assert all(window_of(r) is not None for r in server.requests)
    assert report.root_cause is not None and report.root_cause.step_index == 2


def long_run(goal: str = GOAL) -> AgentTrajectory:
    """60 steps of two agents, each about 900 words: read by lifecycle in many windows."""
    return AgentTrajectory(
        id="long",
        goal=goal,
        events=[
            AgentEvent(
                id=f"e{i}",
                type=EventType.MESSAGE,
                step_index=i,
                agent_name=f"a{i % 2}",
                output=f"step {i}: " + "word " * 900,
            )
            for i in range(60)
        ],
    )


def test_lifecycle_tokens_stay_within_one_pass() -> None:
    long = long_run()
    with ScriptedServer(lambda r: json.dumps({"triggers": [], "updates": []})) as aao_free:
        lifecycle = diagnose(long, attributor="lifecycle", settings=settings_for(aao_free))
    with ScriptedServer(
        lambda r: json.dumps(
            {
                "agent": "a0",
                "step": 0,
                "failure_mode": None,
                "reason": "r",
                "evidence": [],
                "confidence": 0.5,
            }
        )
    ) as server:
        one_pass = diagnose(long, attributor="all-at-once", settings=settings_for(server))
    assert lifecycle.cost.calls > 1
    assert lifecycle.cost.input_tokens <= one_pass.cost.input_tokens
    assert any("no error instance survived grounding" in (a.detail or "") for a in lifecycle.audit)


# -- DeepDebug ----------------------------------------------------------------------------------


def global_read(
    step: int, agent: str, *, failure: int = 11, fix: str = "Use the 2020 column."
) -> str:
    return json.dumps(
        {
            "goal": "Lyon 2020 population",
            "history": "they read a table",
            "failure_step": failure,
            "agent": agent,
            "step": step,
            "failure_mode": None,
            "reason": "read the wrong year",
            "evidence": [{"step": step, "text": SAYS[step][:30]}],
            "fix": fix,
            "confidence": 0.6,
        }
    )


def candidate(step: int, agent: str, reason: str = "chain reading") -> str:
    return json.dumps(
        {
            "agent": agent,
            "step": step,
            "failure_mode": None,
            "reason": reason,
            "evidence": [{"step": step, "text": SAYS[step][:25]}],
            "confidence": 0.7,
        }
    )


def stage(request: dict[str, Any]) -> str:
    text = text_of(request)
    if "reconstruct what happened" in text:
        return "global"
    if "chain of handoffs" in text:
        return "chain"
    if "Two readings of this failed run" in text:
        return "cross"
    if "overview of steps" in text:
        return "bisect"
    return "region"


def test_deepdebug_accepts_when_the_probe_agrees() -> None:
    def script(request: dict[str, Any]) -> str:
        return global_read(2, "writer") if stage(request) == "global" else candidate(2, "writer")

    with ScriptedServer(script) as server:
        report = diagnose(lyon(), attributor="deepdebug", settings=settings_for(server))
    assert [stage(r) for r in server.requests] == ["global", "chain"]
    root = report.root_cause
    assert root is not None and (root.step_index, root.agent_name) == (2, "writer")
    assert root.metadata["agreed"] is True and root.confidence > 0.7
    assert (
        report.fix is not None
        and report.fix.directive == "Use the 2020 column."
        and report.fix.target_step == 2
    )
    assert root.evidence and all(e.grounded for e in root.evidence)
    # The probe is independent: it does not see the first candidate's reasoning.
    assert "read the wrong year" not in text_of(server.requests[1])
    inspections = [a.detail for a in report.audit if a.stage == "inspect"]
    assert any("handoff chain" in (d or "") for d in inspections)


def test_deepdebug_reads_a_small_run_whose_budget_share_is_under_its_instructions() -> None:
    """A two-step run: DeepDebug's share of a small all-at-once pass is less than
    its global read's instructions take. The view gets the least it is given, and
    the read is made (it used to stop with a ConfigError saying to raise a prompt
    budget that was not the limit, and the automatic diagnosis was lost)."""
    small = lyon(filler=False).model_copy(update={"events": lyon(filler=False).events[:3]})

    def script(request: dict[str, Any]) -> str:
        return (
            global_read(2, "writer", failure=2)
            if stage(request) == "global"
            else candidate(2, "writer")
        )

    with ScriptedServer(script) as server:
        report = diagnose(small, attributor="deepdebug", settings=settings_for(server))
    assert stage(server.requests[0]) == "global"
    assert "Lyon" in text_of(server.requests[0])  # the trace is in the read
    root = report.root_cause
    assert root is not None and (root.step_index, root.agent_name) == (2, "writer")


def test_deepdebug_cross_examines_a_disagreement() -> None:
    def script(request: dict[str, Any]) -> str:
        kind = stage(request)
        if kind == "global":
            return global_read(5, "writer")
        if kind == "chain":
            return candidate(2, "writer", reason="the 2019 column was chosen here")
        return json.dumps(
            {
                "choice": "B",
                "reason": "step 5 only follows step 2",
                "evidence": [{"step": 2, "text": "use the 2019 column"}],
                "fix": "At step 2 read the 2020 column.",
                "confidence": 0.8,
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(lyon(), attributor="deepdebug", settings=settings_for(server))
    assert [stage(r) for r in server.requests] == ["global", "chain", "cross"]
    cross = text_of(server.requests[2])
    assert "A. Step 5" in cross and "B. Step 2" in cross and SAYS[5] in cross and SAYS[2] in cross
    root = report.root_cause
    assert root is not None and root.step_index == 2
    assert report.fix is not None and report.fix.directive == "At step 2 read the 2020 column."
    assert (
        report.hypotheses[1].step_index == 5
        and report.hypotheses[1].metadata["rejected_by"] == "cross-examination"
    )


def test_deepdebug_bisects_a_single_agent_run() -> None:
    solo = lyon().model_copy(
        update={"events": [e.model_copy(update={"agent_name": "solo"}) for e in lyon().events]}
    )

    def script(request: dict[str, Any]) -> str:
        kind = stage(request)
        if kind == "global":
            return global_read(4, "solo")
        if kind == "bisect":
            return json.dumps({"half": "first", "reason": "early", "confidence": 0.7})
        if kind == "cross":
            return json.dumps(
                {
                    "choice": "B",
                    "reason": "earlier and causal",
                    "evidence": [],
                    "fix": "Read 2020.",
                    "confidence": 0.7,
                }
            )
        return candidate(2, "solo")

    with ScriptedServer(script) as server:
        report = diagnose(solo, attributor="deepdebug", settings=settings_for(server))
    # 12 steps up to the failure at 11: halved twice to a region of 3, re-read, then
    # the disagreement (4 vs 2) is cross-examined: five calls.
    assert [stage(r) for r in server.requests] == ["global", "bisect", "bisect", "region", "cross"]
    region = text_of(server.requests[3])
    assert all(SAYS[s] in region for s in (0, 1, 2))
    assert report.root_cause is not None and report.root_cause.step_index == 2


def test_deepdebug_takes_hints_from_past_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    class Hub:
        @hookimpl
        def agentdebug_debugging_hints(self, trajectory: AgentTrajectory) -> list[str]:
            return [
                "A census run once read the wrong year column; the fix was to check the header."
            ]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Hub())
    monkeypatch.setattr(plugins, "_default", Registry.from_plugin_manager(pm))

    def script(request: dict[str, Any]) -> str:
        return global_read(2, "writer") if stage(request) == "global" else candidate(2, "writer")

    with ScriptedServer(script) as server:
        diagnose(lyon(), attributor="deepdebug", settings=settings_for(server))
    assert "read the wrong year column" in text_of(server.requests[0])


def test_handoff_chain_walks_upstream_from_the_failure() -> None:
    events = [
        AgentEvent(
            id="e0",
            type=EventType.HANDOFF,
            step_index=0,
            agent_name="boss",
            output="search",
            metadata={"target": "searcher"},
        ),
        AgentEvent(
            id="e1", type=EventType.MESSAGE, step_index=1, agent_name="searcher", output="found X"
        ),
        AgentEvent(
            id="e2",
            type=EventType.HANDOFF,
            step_index=2,
            agent_name="boss",
            output="write it",
            metadata={"target": "writer"},
        ),
        AgentEvent(
            id="e3", type=EventType.MESSAGE, step_index=3, agent_name="critic", output="looks odd"
        ),
        AgentEvent(
            id="e4",
            type=EventType.MESSAGE,
            step_index=4,
            agent_name="writer",
            output="report with X",
        ),
    ]
    traj = AgentTrajectory(id="c", events=events)
    chain = DeepDebugAttributor().chain(traj, TraceFacts.of(traj), failure=4)
    assert chain == [4, 2, 1, 0]  # writer <- boss's handoff <- searcher's result <- boss's handoff


def test_router_escalates_to_deepdebug_only_when_strategies_disagree() -> None:
    def script(request: dict[str, Any]) -> str:
        text = text_of(request)
        if "is step" in text:  # step-by-step: says step 7
            step = int(re.search(r"is step (\d+) \(by", text).group(1))  # type: ignore[union-attr]
            return json.dumps(
                {
                    "decisive": step == 7,
                    "error_probability": 0.9 if step == 7 else 0.1,
                    "failure_mode": None,
                    "reason": "r",
                    "evidence": "",
                }
            )
        kind = stage(request)
        if kind == "global":
            return global_read(2, "writer")
        if kind == "chain":
            return candidate(2, "writer")
        return json.dumps(
            {
                "agent": "calculator",
                "step": 4,
                "failure_mode": None,
                "reason": "r",
                "evidence": [],
                "confidence": 0.3,
            }
        )

    with ScriptedServer(script) as server:
        report = diagnose(lyon(), attributor="auto", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.step_index == 2
    assert "deepdebug" in root.metadata["supported_by"]
    assert any(line.startswith("deepdebug:") for line in root.metadata["route"])


def test_a_hints_plugin_that_fails_costs_its_hints_not_the_diagnosis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken:
        @hookimpl
        def agentdebug_debugging_hints(self, trajectory: AgentTrajectory) -> list[str]:
            raise RuntimeError("the hub is down")

    class Hub:
        @hookimpl
        def agentdebug_debugging_hints(self) -> list[str]:  # (pluggy lets it take none)
            return ["A census run once read the wrong year column."]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Broken(), name="broken-hub")
    pm.register(Hub(), name="hub")
    monkeypatch.setattr(plugins, "_default", Registry.from_plugin_manager(pm))

    def script(request: dict[str, Any]) -> str:
        return global_read(2, "writer") if stage(request) == "global" else candidate(2, "writer")

    with ScriptedServer(script) as server:
        report = diagnose(lyon(), attributor="deepdebug", settings=settings_for(server))
    root = report.root_cause
    assert root is not None and root.strategy == "deepdebug"  # not the heuristic's fallback
    assert "read the wrong year column" in text_of(server.requests[0])
    assert any(
        "broken-hub" in n and "the hub is down" in n and "hints were left out" in n
        for n in report.notes
    )
