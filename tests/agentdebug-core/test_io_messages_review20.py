"""Chat transcripts as other APIs write them: Anthropic server tools, reasoning in
a message's own fields, the fields of content parts, numeric ids and a stated
outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import MessagesImporter, import_file
from agentdebug.schema import AgentTrajectory, EventType, OutcomeStatus

IMPORTERS = [MessagesImporter()]


def _load(tmp_path: Path, doc: Any, name: str = "chat.json") -> AgentTrajectory:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    runs = import_file(path, importers=IMPORTERS)
    assert len(runs) == 1
    return runs[0].trajectory


def _error(tmp_path: Path, doc: Any) -> InputError:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert "chat.json" in str(info.value)
    return info.value


def _assistant(*content: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "latest news on X?"},
            {"role": "assistant", "content": list(content)},
        ]
    }


SEARCH = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "X"}}
FOUND = [{"type": "web_search_result", "url": "https://a.example", "title": "A", "page_age": "1d"}]


# -- 1. Anthropic server tools ------------------------------------------------------------


def test_a_web_search_result_is_the_output_of_its_call(tmp_path: Path) -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": FOUND}
    t = _load(tmp_path, _assistant(SEARCH, result, {"type": "text", "text": "X announced Y."}))
    assert [(e.id, e.type) for e in t.events] == [
        ("m0", EventType.USER_INPUT),
        ("m1.0", EventType.TOOL_CALL),
        ("m1.0.result", EventType.TOOL_RESULT),
        ("m1", EventType.FINAL_ANSWER),
    ]
    call, found = t.events[1], t.events[2]
    assert call.input == {"q": "X"} and call.metadata["tool_name"] == "web_search"
    assert found.output == FOUND  # (kept whole: nothing lost)
    assert found.parent_id == "m1.0" and found.error is None
    assert t.outcome.final_answer == "X announced Y."


def test_what_the_assistant_said_before_it_searched_is_not_its_answer(tmp_path: Path) -> None:
    """Text, a search, then the answer in one message: the answer is the text after
    the search (before, both texts were joined into the final answer)."""
    result = {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": FOUND}
    said = {"type": "text", "text": "Let me search for that."}
    t = _load(
        tmp_path, _assistant(said, SEARCH, result, {"type": "text", "text": "X announced Y."})
    )
    assert [(e.id, e.type, e.output) for e in t.events if e.type is not EventType.TOOL_RESULT] == [
        ("m0", EventType.USER_INPUT, "latest news on X?"),
        ("m1.said", EventType.LLM_RESPONSE, "Let me search for that."),
        ("m1.0", EventType.TOOL_CALL, None),
        ("m1", EventType.FINAL_ANSWER, "X announced Y."),
    ]
    assert t.outcome.final_answer == "X announced Y."
    # a user message's text around tool results stays whole
    block = {"type": "tool_result", "tool_use_id": "t1", "content": "42"}
    doc = {
        "messages": [
            {"role": "user", "content": "use calc"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "calc", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "here:"},
                    block,
                    {"type": "text", "text": "go on"},
                ],
            },
            {"role": "assistant", "content": "It is 42."},
        ]
    }
    t = _load(tmp_path, doc, "user.json")
    assert any(e.input == "here:\ngo on" or e.output == "here:\ngo on" for e in t.events)


def test_a_code_execution_result_object_is_kept_as_the_output(tmp_path: Path) -> None:
    ran = {"type": "code_execution_result", "stdout": "2.0\n", "stderr": "", "return_code": 0}
    code = {"type": "server_tool_use", "id": "srv_2", "name": "code_execution", "input": {}}
    result = {"type": "code_execution_tool_result", "tool_use_id": "srv_2", "content": ran}
    t = _load(tmp_path, _assistant(code, result, {"type": "text", "text": "The mean is 2."}))
    found = t.event("m1.0.result")
    assert found is not None and found.output == ran and found.parent_id == "m1.0"


def test_a_server_tools_error_object_is_the_results_error(tmp_path: Path) -> None:
    failed = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    result = {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": failed}
    t = _load(tmp_path, _assistant(SEARCH, result, {"type": "text", "text": "All good."}))
    found = t.event("m1.0.result")
    assert found is not None and found.output == failed
    assert found.error is not None and found.error.message == "max_uses_exceeded"
    assert found.error.type == "web_search_tool_result_error"


def test_a_single_part_object_is_named_by_its_own_path(tmp_path: Path) -> None:
    block = {"type": "tool_result", "tool_use_id": "t", "content": {"type": "hologram"}}
    error = _error(tmp_path, {"messages": [{"role": "user", "content": [block]}]})
    assert error.field == "messages[0].content[0].content.type"  # (not ...content[0].type)
    assert "unknown content part type 'hologram'" in str(error)


# -- 2. reasoning in a message's own fields ------------------------------------------------


@pytest.mark.parametrize("key", ["reasoning_content", "thinking", "reasoning"])
def test_reasoning_given_as_a_message_field_is_a_reasoning_event(tmp_path: Path, key: str) -> None:
    said = {"role": "assistant", "content": "391", key: "17*23 is 391."}
    t = _load(tmp_path, {"messages": [{"role": "user", "content": "17*23?"}, said]})
    assert [(e.type, e.output) for e in t.events[1:]] == [
        (EventType.REASONING, "17*23 is 391."),
        (EventType.FINAL_ANSWER, "391"),
    ]
    assert "fields" not in t.events[2].metadata  # (read, not also kept as a field)


def test_deepseek_reasoning_beside_a_tool_call(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{}"}}
    said = {"role": "assistant", "content": None, "reasoning_content": "I'll use calc."}
    t = _load(
        tmp_path, {"messages": [{"role": "user", "content": "go"}, {**said, "tool_calls": [call]}]}
    )
    assert [(e.type, e.output) for e in t.events[1:]] == [
        (EventType.REASONING, "I'll use calc."),
        (EventType.TOOL_CALL, None),
    ]


def test_openrouter_reasoning_details_are_reasoning(tmp_path: Path) -> None:
    details = [
        {"type": "reasoning.summary", "summary": "add the two"},
        {"type": "reasoning.encrypted", "data": "BLOB"},
    ]
    said = {"role": "assistant", "content": "4", "reasoning_details": details}
    t = _load(tmp_path, {"messages": [{"role": "user", "content": "2+2?"}, said]})
    first, hidden = t.events[1], t.events[2]
    assert (first.type, first.output) == (EventType.REASONING, "add the two")
    assert hidden.type is EventType.REASONING and hidden.output is None
    assert hidden.metadata["encrypted"] is True
    assert hidden.metadata["part_fields"]["data"] == "BLOB"


def test_openrouter_reasoning_text_is_read_once_with_its_details_kept(tmp_path: Path) -> None:
    details = [{"type": "reasoning.text", "text": "add", "signature": "s"}]
    said = {"role": "assistant", "content": "4", "reasoning": "add", "reasoning_details": details}
    t = _load(tmp_path, {"messages": [{"role": "user", "content": "2+2?"}, said]})
    assert [e.type for e in t.events].count(EventType.REASONING) == 1
    assert t.events[-1].metadata["fields"]["reasoning_details"] == details


def test_a_bedrock_reasoning_content_part_is_reasoning(tmp_path: Path) -> None:
    part = {"type": "reasoning_content", "reasoning_content": {"text": "hmm", "signature": "sg"}}
    t = _load(tmp_path, _assistant(part, {"type": "text", "text": "Y."}))
    thought = t.events[1]
    assert (thought.type, thought.output) == (EventType.REASONING, "hmm")
    assert thought.metadata["part_fields"] == {"signature": "sg"}


def test_encrypted_responses_reasoning_is_no_empty_reply(tmp_path: Path) -> None:
    doc = {
        "input": [{"role": "user", "content": "weather?"}],
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sunny."}],
            },
        ],
    }
    t = _load(tmp_path, doc)
    assert [(e.type, e.output) for e in t.events] == [
        (EventType.USER_INPUT, "weather?"),
        (EventType.REASONING, None),
        (EventType.FINAL_ANSWER, "Sunny."),
    ]
    hidden = t.events[1].metadata
    assert hidden["encrypted"] is True and hidden["part_fields"] == {"encrypted_content": "gAAA"}


# -- 3. fields inside content parts ---------------------------------------------------------


def test_citations_and_a_thinking_signature_are_kept(tmp_path: Path) -> None:
    cite = {"type": "char_location", "cited_text": "foo", "document_index": 0}
    t = _load(
        tmp_path,
        _assistant(
            {"type": "thinking", "thinking": "Let me see.", "signature": "sigABC"},
            {"type": "text", "text": "Foo.", "citations": [cite]},
        ),
    )
    thought, answer = t.events[1], t.events[2]
    assert thought.output == "Let me see." and thought.metadata["part_fields"] == {
        "signature": "sigABC"
    }
    assert answer.output == "Foo." and answer.metadata["part_fields"] == {"citations": [cite]}


def test_output_text_annotations_are_kept(tmp_path: Path) -> None:
    note = {"type": "url_citation", "url": "https://x.example", "start_index": 0, "end_index": 5}
    text = {"type": "output_text", "text": "Sunny.", "annotations": [note], "logprobs": []}
    doc = {
        "input": "weather?",
        "output": [{"type": "message", "role": "assistant", "content": [text]}],
    }
    t = _load(tmp_path, doc)
    assert t.events[-1].metadata["part_fields"] == {"annotations": [note]}


def test_an_audio_reply_says_its_transcript(tmp_path: Path) -> None:
    audio = {"id": "audio_1", "data": "UklGRg==", "transcript": "Hello world."}
    said = {"role": "assistant", "content": None, "audio": audio}
    t = _load(tmp_path, {"messages": [{"role": "user", "content": "say hi"}, said]})
    assert t.events[-1].type is EventType.FINAL_ANSWER
    assert t.outcome.final_answer == "Hello world."
    assert t.events[-1].metadata["fields"]["audio"] == audio  # (the audio itself kept)


# -- 4. a numeric conversation id -----------------------------------------------------------


def test_a_numeric_conversation_id_is_the_run_id(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    lines = [
        {"id": 1017, "messages": [{"role": "user", "content": "a"}]},
        {"id": 2044, "messages": [{"role": "user", "content": "b"}]},
        {"id": True, "messages": [{"role": "user", "content": "c"}]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    runs = import_file(path, importers=IMPORTERS)
    assert [r.trajectory.id for r in runs] == ["1017", "2044", "messages-chats-3"]
    assert _load(tmp_path, {"id": 7, "messages": [{"role": "user", "content": "a"}]}).id == "7"


# -- 5. how the transcript says the run ended -----------------------------------------------


def test_a_stated_outcome_is_the_runs(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "total?"}, {"role": "assistant", "content": "1,000."}]
    told = {"status": "failure", "reason": "expected 2,050.00", "by": "user"}
    t = _load(tmp_path, {"outcome": told, "messages": messages})
    assert t.outcome.status is OutcomeStatus.FAILURE
    assert t.outcome.reason == "expected 2,050.00"
    assert t.outcome.final_answer == "1,000."
    assert t.metadata["outcome_fields"] == {"by": "user"}
    assert "fields" not in t.metadata  # (read, not parked)
    t = _load(tmp_path, {"outcome": "Success", "messages": messages})
    assert t.outcome.status is OutcomeStatus.SUCCESS


@pytest.mark.parametrize(
    ("outcome", "field", "words"),
    [
        ({"status": "broken"}, "outcome.status", "'broken' is not an outcome status (success,"),
        ({"status": "failure", "reason": 5}, "outcome.reason", "expected a string, got number"),
        ([1], "outcome", "expected an object"),
        ({"status": "failure", "error": {"message": ["x"]}}, "outcome.error.message", "string"),
    ],
)
def test_a_bad_outcome_names_its_field(
    tmp_path: Path, outcome: Any, field: str, words: str
) -> None:
    error = _error(tmp_path, {"outcome": outcome, "messages": [{"role": "user", "content": "a"}]})
    assert error.field == field and words in str(error)


def test_a_bad_outcome_on_a_json_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    lines = [
        {"messages": [{"role": "user", "content": "a"}]},
        {"outcome": {"status": "meh"}, "messages": [{"role": "user", "content": "b"}]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    with pytest.raises(RecordsSkipped) as info:
        import_file(path, importers=IMPORTERS)
    (error,) = info.value.errors
    assert "chats.jsonl, line 2, field 'outcome.status'" in str(error)


def test_one_reasoning_text_in_two_fields_is_one_reasoning_event(tmp_path: Path) -> None:
    """vLLM sends the same text as ``reasoning_content`` and ``reasoning``: one
    reasoning step, not two alike (a review's find)."""
    said = {"role": "assistant", "content": "391", "reasoning_content": "17*23 is 391.",
            "reasoning": "17*23 is 391."}  # fmt: skip
    t = _load(tmp_path, {"messages": [{"role": "user", "content": "17*23?"}, said]})
    assert [e.type for e in t.events[1:]] == [EventType.REASONING, EventType.FINAL_ANSWER]


@pytest.mark.parametrize(
    ("word", "status"),
    [("failed", OutcomeStatus.FAILURE), ("Error", OutcomeStatus.FAILURE),
     ("passed", OutcomeStatus.SUCCESS), ("ok", OutcomeStatus.SUCCESS)],
)  # fmt: skip
def test_an_outcome_in_other_common_words_is_read(
    tmp_path: Path, word: str, status: OutcomeStatus
) -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert _load(tmp_path, {"outcome": word, "messages": messages}).outcome.status is status


@pytest.mark.parametrize("word", ["done", "completed", "meh"])
def test_a_word_that_says_nothing_of_success_is_refused(tmp_path: Path, word: str) -> None:
    """ "done" says the run ended, not that it worked (with a reason saying what went
    wrong it was read as a success, and never diagnosed; a review's find)."""
    error = _error(tmp_path, {"outcome": {"status": word, "reason": "refund amount wrong"},
                              "messages": [{"role": "user", "content": "a"}]})  # fmt: skip
    assert error.field == "outcome.status"


def test_a_status_with_spaces_around_it_is_read(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    run = _load(tmp_path, {"outcome": " success ", "messages": messages})
    assert run.outcome.status is OutcomeStatus.SUCCESS
