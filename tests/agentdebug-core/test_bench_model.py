"""The harness, proven with scripted servers: the gold answer scores 100 %, a fixed
wrong answer scores exactly what it should, unparseable answers count as wrong."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agentdebug.bench import run_whowhen
from agentdebug.io import WhoWhenImporter, import_paths
from agentdebug.llm import LLMSettings
from agentdebug.llm.testing import Reply, ScriptedServer
from conftest import DATA, run_cli

WHOWHEN = DATA / "whowhen"
pytestmark = pytest.mark.skipif(not WHOWHEN.is_dir(), reason="../shared/data not present")


Table = dict[tuple[str, str], tuple[str, int]]


def gold() -> Table:
    """(question's first 120 characters, framework) -> (agent, step), from the labels.

    21 questions appear in both subsets; the framework in the prompt's header tells
    them apart (checked unique below)."""
    out: Table = {}
    for run in import_paths([WHOWHEN], importers=[WhoWhenImporter()]).runs:
        t = run.trajectory
        assert run.label is not None and t.goal and t.framework
        key = (t.goal[:120], t.framework)
        assert key not in out
        out[key] = (run.label.agent_name or "", run.label.step_index or 0)
    return out


def lookup(table: Table, request: dict[str, Any]) -> tuple[str, int]:
    text = "\n".join(str(m["content"]) for m in request["messages"])
    hits = [
        v for (question, fw), v in table.items() if question in text and f"### TRACE · {fw}" in text
    ]
    assert len(hits) == 1, f"{len(hits)} traces match this prompt"
    return hits[0]


def gold_answerer(table: Table) -> Any:
    """A server script that answers every prompt with its trace's gold label."""

    def oracle(request: dict[str, Any]) -> str:
        agent, step = lookup(table, request)
        answer = {"agent": agent, "step": step, "failure_mode": None, "reason": "gold"}
        return json.dumps({**answer, "evidence": [], "confidence": 1.0})

    return oracle


def settings(server: ScriptedServer) -> LLMSettings:
    return LLMSettings(
        model="scripted",
        base_url=server.base_url,
        api_key="k",
        cache=False,
        max_retries=0,
        concurrency=4,
    )


def test_a_server_that_answers_the_gold_label_scores_100_percent() -> None:
    table = gold()

    oracle = gold_answerer(table)

    with ScriptedServer(oracle) as server:
        result = run_whowhen(
            [WHOWHEN], attributor="all-at-once", settings=settings(server), workers=4
        )
    summary = result.groups
    for group in ("all", "Algorithm-Generated", "Hand-Crafted"):
        assert summary[group]["agent"] == 100.0, group
        assert summary[group]["step"] == 100.0, group
        assert summary[group]["agent_and_step"] == 100.0, group
    assert summary["all"]["traces"] == 155
    assert summary["all"]["calls_per_trace"]["mean"] == 1.0
    assert len(server.requests) == 155
    # Token counts are the server's own usage figures.
    assert sum(s.input_tokens for s in result.scores) > 155 * 500


def test_a_fixed_wrong_step_scores_what_it_should() -> None:
    table = gold()
    runs = import_paths([WHOWHEN / "Algorithm-Generated"], importers=[WhoWhenImporter()]).runs
    expected_step = sum(1 for r in runs if r.label and r.label.step_index == 1)

    def fixed(request: dict[str, Any]) -> str:
        agent, _ = lookup(table, request)
        return json.dumps(
            {
                "agent": agent,
                "step": 1,
                "failure_mode": None,
                "reason": "r",
                "evidence": [],
                "confidence": 0.5,
            }
        )

    with ScriptedServer(fixed) as server:
        result = run_whowhen(
            [WHOWHEN / "Algorithm-Generated"],
            attributor="all-at-once",
            settings=settings(server),
            workers=4,
        )
    summary = result.groups["Algorithm-Generated"]
    assert summary["agent"] == 100.0
    assert summary["step"] == round(100 * expected_step / len(runs), 1)


def test_unparseable_answers_count_as_wrong() -> None:
    files = sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))[:6]
    with ScriptedServer(
        lambda r: Reply("I think it was probably the second agent, honestly.")
    ) as server:
        no_fallback = settings(server).model_copy(update={"no_fallback": True})
        result = run_whowhen(files, attributor="all-at-once", settings=no_fallback)
    summary = result.groups["all"]
    assert summary["traces"] == 6 and summary["answered"] == 0
    assert summary["agent"] == 0.0 and summary["step"] == 0.0
    assert all(s.error and "JSON" in s.error for s in result.scores), [
        s.error for s in result.scores
    ]
    assert len(server.requests) == 12  # each: one answer and one repair round


def test_a_rerun_is_served_from_the_cache(tmp_path: Path) -> None:
    files = sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))[:5]
    table = gold()

    oracle = gold_answerer(table)

    with ScriptedServer(oracle) as server:
        cached = settings(server).model_copy(
            update={"cache": True, "cache_path": str(tmp_path / "cache.db")}
        )
        first = run_whowhen(files, attributor="all-at-once", settings=cached)
        second = run_whowhen(files, attributor="all-at-once", settings=cached)
    assert len(server.requests) == 5
    assert [s.calls for s in first.scores] == [1] * 5
    assert [(s.calls, s.cached_calls) for s in second.scores] == [(0, 1)] * 5
    assert second.groups["all"]["step"] == 100.0


def test_bench_dry_run_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    """`agentdebug scripted-server` + `agentdebug bench ... --base-url`, two real processes."""
    port = 18765 + (int(time.time()) % 500)
    server = subprocess.Popen(
        [sys.executable, "-m", "agentdebug", "scripted-server", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        out = tmp_path / "dry.json"
        result = run_cli(
            "bench",
            "whowhen",
            str(WHOWHEN / "Hand-Crafted"),
            "--attributor",
            "all-at-once",
            "--model",
            "scripted",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--api-key",
            "none",
            "--no-cache",
            "--output",
            str(out),
        )
        assert result.returncode == 0, result.stderr
        data = json.loads(out.read_text())
        assert data["summary"]["all"]["traces"] == 29
        assert data["summary"]["all"]["answered"] == 29
        assert data["summary"]["all"]["calls_per_trace"]["mean"] == 1.0
        assert data["config"]["model"] == "scripted"
    finally:
        server.terminate()
        server.wait(timeout=10)


TRAIL = DATA / "trail"


def test_trail_harness_end_to_end_with_a_judge_that_answers_the_annotations() -> None:
    """The judge answers every annotated error at its span's step, with the mode whose
    first TRAIL category is the annotated one (where the crosswalk has one)."""
    from agentdebug.bench import run_trail, summarize_trail
    from agentdebug.io import TrailImporter, import_file, load_trail_annotations
    from agentdebug.taxonomy import SEED_MODES

    mode_for: dict[str, str] = {}
    for mode in SEED_MODES:
        if mode.crosswalk.trail:
            mode_for.setdefault(mode.crosswalk.trail[0], mode.id)
    answers: list[tuple[str, str, str]] = []  # (goal, last span id, the judge's answer)
    joint: list[float] = []
    located: list[float] = []
    for path in sorted((TRAIL / "gaia" / "traces").glob("*.json")):
        trajectory = import_file(path, importers=[TrailImporter()])[0].trajectory
        label = load_trail_annotations(TRAIL / "gaia" / "annotations" / path.name)
        step_of = {e.id: e.step_index for e in trajectory.events}
        errors = label.errors[:8]  # the judge lists at most 8 findings
        findings = [
            {
                "step": step_of[e["location"]],
                "failure_mode": mode_for.get(e["category"], "reflection.flawed_reasoning"),
                "description": "annotated error",
                "evidence": "",
                "confidence": 0.9,
            }
            for e in errors
        ]
        assert trajectory.goal
        last = trajectory.events[-1].id  # one goal is shared by two traces: the span ids differ
        answers.append((trajectory.goal, last, json.dumps({"findings": findings})))
        gold = {(e["location"], e["category"]) for e in label.errors}
        hit = {(e["location"], e["category"]) for e in errors if e["category"] in mode_for}
        if gold:
            joint.append(len(hit) / len(gold))
            spans = {e["location"] for e in label.errors}
            located.append(len(spans & {e["location"] for e in errors}) / len(spans))

    def judge(request: dict[str, Any]) -> str:
        text = "\n".join(str(m["content"]) for m in request["messages"])
        hits = [answer for goal, last, answer in answers if goal in text and last in text]
        assert len(hits) == 1, f"{len(hits)} traces match this prompt"
        return hits[0]

    with ScriptedServer(judge) as server:
        result = run_trail(TRAIL, judge=True, settings=settings(server))
    summary = summarize_trail(result.scores)
    assert summary["traces"] == 72 and summary["failed"] == 0, [s.error for s in result.scores][:2]
    assert summary["calls_per_trace"] == 1.0
    assert summary["location_recall"] == round(100 * sum(located) / len(located), 1)
    assert summary["location_recall"] == 100.0  # every annotated span is named
    assert summary["location_category_recall"] == round(100 * sum(joint) / len(joint), 1)


@pytest.mark.parametrize("strategy", ["lifecycle", "deepdebug", "auto"])
def test_the_harness_runs_every_model_strategy_end_to_end(strategy: str) -> None:
    from agentdebug.llm.testing import schema_answerer

    files = [
        *sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))[:3],
        *sorted((WHOWHEN / "Hand-Crafted").glob("*.json"))[:2],
    ]
    with ScriptedServer(schema_answerer) as server:
        result = run_whowhen(files, attributor=strategy, settings=settings(server))
    scores = result.scores
    assert len(scores) == 5
    # The schema answerer's findings never ground, so lifecycle may have no answer;
    # what matters here is that every trace ran through the real client, no crash.
    crashed = [s.error for s in scores if s.error and not s.error.startswith("no answer")]
    assert crashed == []
    assert all(s.calls >= 1 for s in scores)
    assert len(server.requests) == sum(s.calls for s in scores)
