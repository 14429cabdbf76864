"""Transcripts as they come out of real runs: labels in any case, observations that
quote a transcript, files saved with a byte order mark, and errors in a plain
text file named by the file's own line."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import import_file
from agentdebug_react import load_transcript, parse_transcript


def _steps(text: str) -> list[tuple[int, str, object]]:
    run = parse_transcript(text)
    return [
        (e.step_index, e.type.value, e.input if e.type.value == "tool.call" else e.output)
        for e in run.events
    ]


def test_labels_in_any_case_are_read() -> None:
    lower = (
        "question: How far is it?\n"
        "thought: I should measure.\n"
        "ACTION: measure\n"
        'action input: {"from": "a", "to": "b"}\n'
        "OBSERVATION: 12 km\n"
        "Thought : done\n"
        "FINAL ANSWER: 12 km\n"
    )
    assert _steps(lower) == [
        (0, "user.input", None),
        (1, "reasoning", "I should measure."),
        (1, "tool.call", {"from": "a", "to": "b"}),
        (1, "tool.result", "12 km"),
        (2, "reasoning", "done"),
        (2, "final_answer", "12 km"),
    ]
    assert parse_transcript(lower).goal == "How far is it?"


def test_an_observation_that_quotes_a_transcript_keeps_it_as_its_text() -> None:
    text = (
        "Question: How do ReAct prompts look?\n"
        "Thought: I will search the docs.\n"
        "Action: search\n"
        "Action Input: react prompt format\n"
        "Observation: A ReAct prompt shows the model examples such as:\n"
        "Thought: I need to search Apple Remote.\n"
        "Action: Search[Apple Remote]\n"
        "Thought: I have what I need.\n"
        "Final Answer: Thought/Action/Observation lines.\n"
    )
    run = parse_transcript(text)
    assert [(e.step_index, e.type.value) for e in run.events][3:] == [
        (1, "tool.result"),
        (2, "reasoning"),
        (2, "final_answer"),
    ]  # the quoted lines made no step of their own
    result = run.events[3]
    assert result.output == (
        "A ReAct prompt shows the model examples such as:\n"
        "Thought: I need to search Apple Remote.\n"
        "Action: Search[Apple Remote]"
    )
    assert result.metadata["quoted_label_lines"] == [6, 7]
    assert run.outcome.final_answer == "Thought/Action/Observation lines."


def test_an_observation_quoting_a_single_thought_line_keeps_it_as_its_text() -> None:
    """One quoted ``Thought:`` line breaks no order: it was read as a step of its own,
    a thought with no action, and every later step was numbered one too high."""
    text = (
        "Question: What did the planner decide?\n"
        "Thought: I will read the planner's log.\n"
        "Action: read_log\n"
        "Action Input: planner\n"
        "Observation: The log's last line is:\n"
        "Thought: the budget is 40 EUR\n"
        "Thought: The planner set a budget of 40 EUR.\n"
        "Final Answer: 40 EUR\n"
    )
    run = parse_transcript(text)
    assert [(e.step_index, e.type.value) for e in run.events][3:] == [
        (1, "tool.result"),
        (2, "reasoning"),
        (2, "final_answer"),
    ]
    result = run.events[3]
    assert result.output == "The log's last line is:\nThought: the budget is 40 EUR"
    assert result.metadata["quoted_label_lines"] == [6]
    assert run.events[4].output == "The planner set a budget of 40 EUR."


@pytest.mark.parametrize(
    "text",
    [
        # the run's last step, a thought the model never finished
        "Thought: t\nAction: a\nAction Input: x\nObservation: obs\nThought: still thinking\n",
        # numbered: the transcript says it is a step
        "Thought 1: t\nAction 1: a\nAction Input 1: x\nObservation 1: obs\n"
        "Thought 2: hmm\nThought 3: so\nFinal Answer 3: A\n",
        # after a step with no Observation (the first step)
        "Thought: first\nThought: second\nFinal Answer: A\n",
        # the model's own second thought: the Observation introduces no quote
        "Thought: add\nAction: calc\nAction Input: 6*7\nObservation: 42\n"
        "Thought: The calculator returned 42, but it may be an error.\n"
        "Thought: I now know the final answer.\nFinal Answer: 42\n",
    ],
)
def test_a_thought_alone_that_is_no_quote_stays_a_step(text: str) -> None:
    run = parse_transcript(text)
    reasoning = [e for e in run.events if e.type.value == "reasoning"]
    assert len(reasoning) == text.count("Thought")


def test_a_transcript_out_of_order_is_still_an_error_at_its_first_break() -> None:
    with pytest.raises(InputError, match=r"line 4: a second 'Observation'"):
        parse_transcript("Thought: a\nAction: b\nObservation: c\nObservation: d\n")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (  # the model went on after its answer: its own lines, not a quote
            "Thought: t\nAction: a\nAction Input: x\nObservation: obs\n"
            "Thought: done\nFinal Answer: A\nFinal Answer: B\n",
            r"line 7: 'Final Answer' after the Final Answer on line 6",
        ),
        (  # two Actions in one step: the model's malformed output, shown as such
            "Thought: t\nAction: a\nAction Input: x\nObservation: obs\n"
            "Thought: u\nAction: lookup\nAction: search\nAction Input: y\n",
            r"line 7: a second 'Action'",
        ),
    ],
)
def test_a_models_own_malformed_lines_are_not_taken_for_a_quote(text: str, said: str) -> None:
    """Before the review: both were read, the model's lines folded into the tool's
    result at step 1 (which then read as the tool's output)."""
    with pytest.raises(InputError, match=said):
        parse_transcript(text)


def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"\xef\xbb\xbfQuestion: q\nThought: t\nFinal Answer: a\n")
    run = load_transcript(path)
    assert run.goal == "q" and run.outcome.final_answer == "a"


def test_an_error_in_a_plain_text_file_names_the_file_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("Question: q\nThought: t\nAction Input: x\n")
    with pytest.raises(InputError) as info:
        import_file(path)
    assert str(info.value) == (
        f"{path}: line 3: 'Action Input' with no 'Action' before it: 'Action Input: x'"
    )
