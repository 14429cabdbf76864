"""Who&When: every history entry is one event at its own index; the label stays apart."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import WhoWhenImporter, import_file, import_paths
from agentdebug.io.whowhen import LABEL_FIELDS, normalise_agent
from agentdebug.schema import AgentTrajectory, EventType, OutcomeStatus
from agentdebug.stages import ImportedRun

FIXTURES = Path(__file__).parent / "fixtures" / "io"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
WHOWHEN = DATA / "whowhen"
IMPORTERS = [WhoWhenImporter()]

# Labels in the data whose step does not point at a turn of the labelled agent
# (checked by hand: the benchmark's own files disagree with themselves).
KNOWN_INCONSISTENT = {
    ("Algorithm-Generated", "14.json"),  # label Culinary_Awards_Expert, step 2 is Computer_terminal
    ("Algorithm-Generated", "15.json"),  # label Boggle_Board_Expert, step 6 is Verification_Expert
    ("Algorithm-Generated", "59.json"),  # label DataExtraction_Expert, step 1 is Computer_terminal
    ("Hand-Crafted", "49.json"),  # label WebSurfer, step 12 is Assistant
}

needs_data = pytest.mark.skipif(
    not WHOWHEN.is_dir(), reason=f"Who&When data not found at {WHOWHEN} (../shared/data)"
)


def _one(path: Path) -> ImportedRun:
    runs = import_file(path, importers=IMPORTERS)
    assert len(runs) == 1
    return runs[0]


def _contains_text(trajectory: AgentTrajectory, text: str) -> bool:
    needle = json.dumps(text, ensure_ascii=False)[1:-1]
    return needle in trajectory.model_dump_json()


# -- small hand-written files ------------------------------------------------------------


def test_hand_crafted_roles_become_typed_events() -> None:
    run = _one(FIXTURES / "whowhen_small_hc.json")
    t = run.trajectory
    assert t.id == "whowhen-hc-whowhen_small_hc"
    assert t.framework == "magentic-one"
    assert [e.step_index for e in t.events] == list(range(6))
    assert [e.id for e in t.events] == [f"e{i}" for i in range(6)]
    assert [e.type for e in t.events] == [
        EventType.USER_INPUT,
        EventType.PLAN,
        EventType.HANDOFF,
        EventType.MESSAGE,
        EventType.REASONING,
        EventType.FINAL_ANSWER,
    ]
    assert [e.agent_name for e in t.events] == [
        None,
        "Orchestrator",
        "Orchestrator",
        "WebSurfer",
        "Orchestrator",
        "Orchestrator",
    ]
    handoff = t.events[2]
    assert handoff.metadata["target"] == "WebSurfer"
    assert handoff.metadata["role"] == "Orchestrator (-> WebSurfer)"
    assert t.events[1].metadata["kind"] == "thought"
    assert t.events[5].metadata["final_answer"] == "95"
    assert t.events[5].metadata["stop_reason"] == "No agent selected."
    assert t.outcome.status is OutcomeStatus.FAILURE
    assert t.outcome.final_answer == "95"
    assert t.reference_answer == "2"
    assert t.goal == "How many moons does Mars have?"
    assert t.metadata["question_ID"] == "test-0001"


def test_the_label_is_returned_apart_and_never_inside_the_trajectory() -> None:
    run = _one(FIXTURES / "whowhen_small_hc.json")
    assert run.label is not None
    assert run.label.source == "whowhen"
    assert run.label.agent_name == "Orchestrator"
    assert run.label.step_index == 2
    assert run.label.metadata["is_corrected"] is False
    assert not _contains_text(run.trajectory, run.label.reason or "")
    assert not LABEL_FIELDS & set(run.trajectory.metadata)
    dumped = run.trajectory.model_dump_json()
    assert "mistake" not in dumped and "is_corrected" not in dumped


def test_algorithm_generated_terminal_output_becomes_a_tool_result_with_its_error() -> None:
    run = _one(FIXTURES / "whowhen_small_ag.json")
    t = run.trajectory
    assert t.id == "whowhen-ag-whowhen_small_ag"
    assert t.framework == "ag2"
    first, failed, ok, last = t.events
    assert first.type is EventType.MESSAGE and first.agent_name == "Math_Expert"
    assert failed.type is EventType.TOOL_RESULT
    assert failed.metadata["exit_code"] == 1
    assert failed.error is not None
    assert failed.error.type == "ModuleNotFoundError"
    assert "No module named 'nonexistent'" in failed.error.message
    assert ok.type is EventType.TOOL_RESULT and ok.error is None
    assert last.type is EventType.MESSAGE
    agents = {a.name: a for a in t.agents}
    assert agents["Math_Expert"].instructions == "You compute."
    assert agents["Computer_terminal"].role == "tool"
    assert run.label is not None and run.label.step_index == 3
    assert t.metadata["level"] == "1"


def test_a_mistake_step_that_is_not_an_integer_names_the_field() -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "whowhen_bad_step.json", importers=IMPORTERS)
    assert info.value.field == "mistake_step"
    assert "whowhen_bad_step.json" in str(info.value)
    assert "'step three'" in str(info.value)


def test_an_empty_history_is_an_error_saying_there_are_no_events() -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "whowhen_empty_history.json", importers=IMPORTERS)
    assert "no events" in str(info.value)
    assert info.value.field == "history"


def test_a_history_entry_with_the_wrong_type_names_record_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    doc = {
        "question": "q",
        "history": [{"role": "human", "content": "q"}, {"role": "WebSurfer", "content": 42}],
        "mistake_step": "1",
    }
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.record == 1
    assert info.value.field == "history[1].content"


def test_normalise_agent() -> None:
    assert normalise_agent("Orchestrator (thought)") == "Orchestrator"
    assert normalise_agent("Orchestrator (-> WebSurfer)") == "Orchestrator"
    assert normalise_agent(" WebSurfer ") == "WebSurfer"


# -- the real benchmark ------------------------------------------------------------------


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize(("subset", "count"), [("Algorithm-Generated", 126), ("Hand-Crafted", 29)])
def test_every_file_imports_with_steps_equal_to_history_indices(subset: str, count: int) -> None:
    files = sorted((WHOWHEN / subset).glob("*.json"))
    assert len(files) == count
    start = time.perf_counter()
    batch = import_paths(files, importers=IMPORTERS)
    elapsed = time.perf_counter() - start
    print(f"\nWho&When {subset}: {count} files in {elapsed:.2f}s")
    assert batch.failures == []
    assert len(batch.runs) == count
    for path, run in zip(files, batch.runs, strict=True):
        history = json.loads(path.read_text())["history"]
        t = run.trajectory
        assert [e.step_index for e in t.events] == list(range(len(history)))
        assert [e.output for e in t.events] == [h["content"] for h in history]
        assert t.framework == ("ag2" if subset == "Algorithm-Generated" else "magentic-one")
        assert t.metadata["subset"] == subset
        assert t.outcome.status is OutcomeStatus.FAILURE
    assert elapsed < 20


@needs_data
@pytest.mark.slow
def test_gold_steps_point_at_the_labelled_agent_except_known_inconsistent_labels() -> None:
    mismatched: set[tuple[str, str]] = set()
    for subset in ("Algorithm-Generated", "Hand-Crafted"):
        for path in sorted((WHOWHEN / subset).glob("*.json")):
            run = _one(path)
            assert run.label is not None and run.label.step_index is not None
            events = {e.step_index: e for e in run.trajectory.events}
            event = events.get(run.label.step_index)
            if event is None or event.agent_name != run.label.agent_name:
                mismatched.add((subset, path.name))
    assert mismatched == KNOWN_INCONSISTENT


@needs_data
@pytest.mark.slow
def test_labels_never_leak_into_the_trajectory() -> None:
    for path in sorted(WHOWHEN.glob("*/*.json")):
        raw = json.loads(path.read_text())
        run = _one(path)
        t = run.trajectory
        assert run.label is not None
        assert run.label.reason == raw["mistake_reason"]
        assert not LABEL_FIELDS & set(t.metadata)
        if _contains_text(t, raw["mistake_reason"]):
            # only allowed when the text is literally part of the conversation
            assert any(raw["mistake_reason"] in h["content"] for h in raw["history"]), path


@needs_data
@pytest.mark.slow
def test_hand_crafted_first_entry_is_the_human_task() -> None:
    for path in sorted((WHOWHEN / "Hand-Crafted").glob("*.json")):
        t = _one(path).trajectory
        assert t.events[0].type is EventType.USER_INPUT
        plans = [e for e in t.events if e.type is EventType.PLAN]
        assert plans and plans[0].metadata["plan"] == "initial"
        handoffs = [e for e in t.events if e.type is EventType.HANDOFF]
        assert all(e.agent_name == "Orchestrator" and e.metadata["target"] for e in handoffs)
