"""The benchmark harnesses score exactly what they should."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from agentdebug import plugins
from agentdebug.bench import normalize_agent, run_trail, run_whowhen, summarize_trail
from agentdebug.bench.metrics import TraceScore, bucket_of, quantile
from agentdebug.bench.trail import TrailScore, category_f1
from agentdebug.io import WhoWhenImporter, import_paths
from agentdebug.plugins import Registry, hookimpl, make_plugin_manager
from agentdebug.schema import AgentTrajectory, Finding, Hypothesis
from conftest import DATA, run_cli

WHOWHEN = DATA / "whowhen"
TRAIL = DATA / "trail"
needs_data = pytest.mark.skipif(not WHOWHEN.is_dir(), reason="../shared/data not present")


class Fixed:
    """An attributor that always answers the same agent and step."""

    def __init__(self, name: str, agent: str | None, step: int | None) -> None:
        self.name, self.agent, self.step = name, agent, step

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        if self.agent is None and self.step is None:
            return []
        return [
            Hypothesis(
                agent_name=self.agent, step_index=self.step, strategy=self.name, confidence=0.5
            )
        ]


class Crashes:
    name = "crashes"

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        raise ValueError("model answer did not parse")


@pytest.fixture
def test_registry(monkeypatch: pytest.MonkeyPatch) -> Registry:
    class Plugin:
        @hookimpl
        def agentdebug_attributors(self) -> list[object]:
            return [
                Fixed("step-one", "Orchestrator (thought)", 1),
                Fixed("silent", None, None),
                Crashes(),
            ]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Plugin())
    reg = Registry.from_plugin_manager(pm)
    monkeypatch.setattr(plugins, "_default", reg)
    return reg


def test_agent_names_and_buckets() -> None:
    assert normalize_agent("Orchestrator (thought)") == normalize_agent("orchestrator")
    assert normalize_agent("Orchestrator (-> WebSurfer)") == "orchestrator"
    assert normalize_agent("Data_Analysis Expert") == "dataanalysisexpert"
    assert [bucket_of(n) for n in (5, 10, 11, 30, 31, 60, 61, 300)] == [
        "<=10",
        "<=10",
        "11-30",
        "11-30",
        "31-60",
        "31-60",
        ">60",
        ">60",
    ]
    assert quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9


def test_steps_compare_as_integers_not_substrings() -> None:
    s = TraceScore("t", "x", 20, gold_agent="A", gold_step=1, pred_agent="A", pred_step=12)
    assert not s.step_ok and not s.step_near and s.agent_ok
    s = TraceScore("t", "x", 20, gold_agent="A", gold_step=11, pred_agent="B", pred_step=12)
    assert not s.step_ok and s.step_near and not s.agent_ok


@needs_data
def test_a_fixed_answer_scores_exactly_what_the_labels_say(test_registry: Registry) -> None:
    hc = WHOWHEN / "Hand-Crafted"
    labels = [r.label for r in import_paths([hc], importers=[WhoWhenImporter()]).runs]
    assert len(labels) == 29
    expected_agent = sum(1 for lab in labels if lab and lab.agent_name == "Orchestrator")
    expected_step = sum(1 for lab in labels if lab and lab.step_index == 1)
    result = run_whowhen([hc], attributor="step-one")
    summary = result.groups["Hand-Crafted"]
    assert summary["agent"] == round(100 * expected_agent / 29, 1)
    assert summary["step"] == round(100 * expected_step / 29, 1)
    assert summary["traces"] == 29 and summary["answered"] == 29


@needs_data
def test_no_answer_and_crashes_count_as_wrong(test_registry: Registry) -> None:
    ag = sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))[:10]
    for name in ("silent", "crashes"):
        result = run_whowhen(ag, attributor=name)
        summary = result.groups["all"]
        assert summary["traces"] == 10
        assert summary["answered"] == 0
        assert summary["agent"] == 0.0 and summary["step"] == 0.0
    crashed = run_whowhen(ag, attributor="crashes").scores
    assert all(s.error and "did not parse" in s.error for s in crashed)


@needs_data
def test_reference_answer_is_hidden_unless_asked(
    test_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []

    class Peek:
        name = "peek"

        def attribute(
            self, trajectory: AgentTrajectory, findings: Sequence[Finding]
        ) -> list[Hypothesis]:
            seen.append(trajectory.reference_answer)
            return []

    test_registry.attributors["peek"] = Peek()
    files = sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))[:3]
    run_whowhen(files, attributor="peek")
    run_whowhen(files, attributor="peek", with_reference=True)
    assert seen[:3] == [None, None, None]
    assert all(seen[3:])


def test_trail_metrics_on_a_small_case() -> None:
    scores = [
        TrailScore(
            "a",
            gold=[("s1", "Goal Deviation"), ("s2", "Formatting Errors")],
            predicted=[("s1", "Goal Deviation"), ("s9", "Language-only")],
        ),
        TrailScore("b", gold=[("s3", "Goal Deviation")], predicted=[("s3", "Tool-related")]),
    ]
    summary = summarize_trail(scores)
    assert summary["location_recall"] == 75.0  # (1/2 + 1/1) / 2
    assert summary["location_category_recall"] == 25.0  # (1/2 + 0) / 2
    f1 = category_f1(scores)
    # Goal Deviation: tp 1, fn 1 -> 2/3; Formatting: fn 1 -> 0; support 2 and 1.
    assert f1["per_category"]["Goal Deviation"] == 66.7
    assert f1["weighted_f1"] == round(100 * (2 / 3 * 2 + 0) / 3, 1)


@needs_data
def test_trail_free_tier_runs_over_every_trace() -> None:
    result = run_trail(TRAIL)
    summary = summarize_trail(result.scores)
    assert summary["traces"] == 72
    assert summary["annotated_errors"] == 267
    assert summary["failed"] == 0
    assert result.failures == []


@needs_data
def test_bench_command_prints_a_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "hc.json"
    result = run_cli("bench", "whowhen", str(WHOWHEN / "Hand-Crafted"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "agent %" in result.stdout and "Hand-Crafted" in result.stdout
    data = json.loads(out.read_text())
    assert data["summary"]["all"]["traces"] == 29
    assert len(data["traces"]) == 29
    assert {"gold_step", "pred_step", "step_ok", "bucket"} <= set(data["traces"][0])
