"""Plain-text ReAct transcripts and replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import import_file
from agentdebug_react import (
    TranscriptError,
    load_transcript,
    parse_reply,
    parse_transcript,
)

LANGCHAIN = """\
Question: How many moons does the planet closest to the sun have?
Thought: I need to find the planet closest to the sun.
Action: search
Action Input: {"query": "planet closest to the sun"}
Observation: Mercury is the smallest planet and the closest to the Sun.
It has no natural satellites.
Thought: Mercury has no moons.
Final Answer: 0
"""

PAPER = """\
Question: Which magazine was started first, Arthur's Magazine or First for Women?
Thought 1: I need to search both magazines.
Action 1: Search[Arthur's Magazine]
Observation 1: Arthur's Magazine (1844-1846) was an American literary periodical.
Thought 2: Now First for Women.
Action 2: Search[First for Women]
Observation 2: First for Women is a woman's magazine started in 1989.
Thought 3: Arthur's Magazine was started first.
Action 3: Finish[Arthur's Magazine]
"""


def test_a_langchain_style_transcript() -> None:
    run = parse_transcript(LANGCHAIN, reference_answer="0")
    assert run.framework == "react"
    assert run.goal == "How many moons does the planet closest to the sun have?"
    assert [(e.step_index, e.type.value) for e in run.events] == [
        (0, "user.input"),
        (1, "reasoning"),
        (1, "tool.call"),
        (1, "tool.result"),
        (2, "reasoning"),
        (2, "final_answer"),
    ]
    call, result = run.events[2], run.events[3]
    assert call.input == {"query": "planet closest to the sun"}  # JSON input, parsed
    assert call.metadata == {"line": 3, "tool_name": "search"} and call.module == "search"
    assert call.parent_id == run.events[1].id and result.parent_id == call.id
    assert result.output.endswith("It has no natural satellites.")  # continuation line
    assert run.events[-1].output == "0" and run.events[-1].parent_id == run.events[4].id
    assert run.outcome.final_answer == "0" and run.outcome.status is OutcomeStatus.UNKNOWN
    assert run.reference_answer == "0"
    assert parse_transcript(LANGCHAIN).id == run.id  # ids are stable for the same text


def test_the_papers_numbered_format_with_bracket_actions() -> None:
    run = parse_transcript(PAPER, agent_name="hotpot", run_id="paper-1")
    assert run.id == "paper-1"
    calls = [e for e in run.events if e.type is EventType.TOOL_CALL]
    assert [(c.step_index, c.module, c.input) for c in calls] == [
        (1, "Search", "Arthur's Magazine"),
        (2, "Search", "First for Women"),
    ]
    final = run.events[-1]
    assert final.type is EventType.FINAL_ANSWER and final.step_index == 3
    assert final.output == "Arthur's Magazine" and final.agent_name == "hotpot"


def test_a_transcript_without_a_final_answer_says_so() -> None:
    run = parse_transcript("Thought: hmm\nAction: look\nAction Input: x\nObservation: nothing")
    assert run.outcome.final_answer is None
    assert run.outcome.reason == "the transcript ends without a Final Answer"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("Hello there\nThought: x", 1, "text before the first label"),
        ("just prose, no labels at all", 1, "text before the first label"),
        ("", None, "no Thought/Action/Observation/Final Answer lines"),
        ("Thought: a\nAction Input: {}", 2, "'Action Input' with no 'Action' before it"),
        ("Thought: a\nObservation: b", 2, "'Observation' with no 'Action' before it"),
        ("Action: a\nAction: b", 2, "second 'Action' before the Observation"),
        ("Action: a\nFinal Answer: b", 2, "has no Observation"),
        ("Action: a\nThought: b", 2, "has no Observation"),
        ("Thought: a\nFinal Answer: b\nThought: c", 3, "after the Final Answer on line 2"),
        ("Thought: a\nQuestion: b", 2, "'Question' must come first"),
        ("Thought 1: a\nAction 2: b", 2, "numbered 2, but it belongs to step 1"),
        ("Action: a\nObservation: b\nObservation: c", 3, "a second 'Observation'"),
        ("Action:\nObservation: b", 1, "no tool name"),
        ("Action: s[x]\nAction Input: y\nObservation: b", 2, "input in brackets and"),
        ("Question: q", None, "no steps"),
    ],
)
def test_malformed_transcripts_name_the_line(text: str, line: int | None, message: str) -> None:
    with pytest.raises(TranscriptError, match=message) as info:
        parse_transcript(text, source="run.txt")
    err = info.value
    if line is not None:
        assert err.line == line
        assert str(err).startswith(f"run.txt: line {line}: ")
    assert isinstance(err, InputError)


def test_load_transcript_reads_a_text_file(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(LANGCHAIN)
    assert load_transcript(path).goal is not None
    path.write_text("Thought: a\nObservation: b\n")
    with pytest.raises(TranscriptError, match=r"t\.txt: line 2: 'Observation'"):
        load_transcript(path)
    with pytest.raises(InputError, match="no such file"):
        load_transcript(tmp_path / "missing.txt")


def test_a_plain_text_transcript_is_ingested_by_agentdebug(tmp_path: Path) -> None:
    path = tmp_path / "moons.txt"
    path.write_text(LANGCHAIN)
    (run,) = [r.trajectory for r in import_file(path)]  # detected among every importer
    assert run.id == "moons" and run.framework == "react"
    assert run.events and run.events[0].step_index == 0
    path.write_text("Thought: a\nObservation: b\n")
    with pytest.raises(InputError, match=r"moons\.txt.*line 2"):
        import_file(path)


def test_import_a_wrapped_transcript_through_agentdebug(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text(
        json.dumps(
            [
                {"transcript": LANGCHAIN, "id": "moons", "reference_answer": "0"},
                {"transcript": PAPER, "agent_name": "hotpot", "metadata": {"split": "dev"}},
            ]
        )
    )
    runs = [r.trajectory for r in import_file(path)]  # the format is detected
    assert [r.id for r in runs] == ["moons", "runs-2"]
    assert runs[0].reference_answer == "0"
    assert runs[1].metadata == {"split": "dev", "imported_from": "react-transcript"}
    assert runs[1].agents[0].name == "hotpot"


def test_a_broken_wrapped_transcript_names_the_file_s_line_and_its_own(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(  # (a blank line: the file's line 3 holds its second record)
        json.dumps({"transcript": LANGCHAIN})
        + "\n\n"
        + json.dumps({"transcript": "Thought: a\nAction Input: x"})
        + "\n"
    )
    with pytest.raises(RecordsSkipped) as info:
        import_file(path, format="react-transcript")
    (error,) = info.value.errors
    assert str(error) == (
        f"{path}, line 3, field 'transcript': its line 2: 'Action Input' with no 'Action' "
        "before it: "
        "'Action Input: x'"
    )
    # the good record is kept (before, one bad record cost the file's every run)
    assert [r.trajectory.id for r in info.value.runs] == ["bad-1"]
    # in a JSON list, the record (its index from 1), as core's importers say it
    listed = tmp_path / "bad.json"
    listed.write_text(json.dumps([{"transcript": LANGCHAIN}, {"transcript": LANGCHAIN, "goal": 7}]))
    with pytest.raises(RecordsSkipped) as info:
        import_file(listed, format="react-transcript")
    assert [str(e) for e in info.value.errors] == [
        f"{listed}, record 2, field 'goal': must be a string"
    ]
    assert len(info.value.runs) == 1
    # a file of one record that cannot be read is that record's error alone
    alone = tmp_path / "alone.json"
    alone.write_text(json.dumps({"transcript": LANGCHAIN, "metadata": 3}))
    with pytest.raises(InputError, match=r"alone.json, field 'metadata': must be an object"):
        import_file(alone, format="react-transcript")


def test_other_json_is_not_taken_for_a_transcript(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "Thought: hi"}]))
    assert import_file(path)[0].trajectory.framework != "react"


def test_a_transcript_with_a_tool_error_is_diagnosed(dbg: AgentDebug) -> None:
    text = (
        "Question: What is in data.csv?\n"
        "Thought: I will read it.\nAction: read_file\nAction Input: dta.csv\n"
        "Observation: Error: FileNotFoundError: No such file or directory: 'dta.csv'\n"
        "Thought: The file has sales figures.\nFinal Answer: sales figures\n"
    )
    report = dbg.diagnose(parse_transcript(text))
    root = report.root_cause
    assert root is not None and root.step_index == 1
    assert "system.resource_not_found" in report.failure_modes


# -- single replies -------------------------------------------------------------------------


def test_a_reply_with_an_action() -> None:
    step = parse_reply('I should look.\nAction: search\nAction Input: {"q": "x"}')
    assert step.thought == "I should look."  # text before the first label is the thought
    assert (step.action, step.action_input, step.is_final) == ("search", {"q": "x"}, False)


def test_a_reply_that_invents_its_own_observation_is_cut_there() -> None:
    step = parse_reply(
        "Thought: go\nAction: search\nAction Input: x\nObservation: made up\nThought: more"
    )
    assert (step.action, step.action_input) == ("search", "x")
    assert step.metadata == {"reply_cut_at_line": 4}


def test_a_final_reply_and_paper_finish() -> None:
    assert parse_reply("Thought: done\nFinal Answer: 42").final_answer == "42"
    assert parse_reply("Action: Finish[yes]").final_answer == "yes"
    assert parse_reply("Action: lookup[Paris]").action_input == "Paris"
    assert parse_reply('Action: f\nAction Input: {"broken": ').action_input == '{"broken":'


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Action: a\nFinal Answer: b", "both an Action"),
        ("Action: a\nAction: b", "more than one Action"),
        ("Action Input: x", "no 'Action' before it"),
        ("Action Input: x\nAction: a", "before its 'Action'"),
        ("Question: why?", "should not ask"),
    ],
)
def test_contradictory_replies_are_errors(reply: str, message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        parse_reply(reply)
