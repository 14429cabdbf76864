"""OpenAI-style chat messages: tool calls linked to their results, one step per message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import MessagesImporter, import_file
from agentdebug.schema import AgentTrajectory, EventType

FIXTURES = Path(__file__).parent / "fixtures" / "io"
IMPORTERS = [MessagesImporter()]


def _load(path: Path) -> AgentTrajectory:
    runs = import_file(path, importers=IMPORTERS)
    assert len(runs) == 1
    return runs[0].trajectory


def test_tool_calls_are_linked_to_their_results_by_tool_call_id() -> None:
    t = _load(FIXTURES / "messages_tool_calls.json")
    by_id = {e.id: e for e in t.events}
    oslo, paris = by_id["m2.0"], by_id["m2.1"]
    assert oslo.type is EventType.TOOL_CALL and paris.type is EventType.TOOL_CALL
    assert oslo.input == {"city": "Oslo"}
    assert oslo.metadata["tool_name"] == "get_weather"
    # results arrive out of order and still find their call
    assert by_id["m3"].type is EventType.TOOL_RESULT and by_id["m3"].parent_id == "m2.1"
    assert by_id["m4"].parent_id == "m2.0"
    assert by_id["m4"].output == "Oslo: 4°C, rain"
    assert by_id["m6"].parent_id == "m5.0"
    assert by_id["m6"].output == "Paris: 12°C, sun"  # a list of parts, as text


def test_malformed_tool_call_arguments_are_kept_with_the_reason() -> None:
    t = _load(FIXTURES / "messages_tool_calls.json")
    paris = t.event("m2.1")
    assert paris is not None
    assert paris.input == '{"city": "Paris"'
    assert "not valid JSON" in paris.metadata["arguments_error"]
    oslo = t.event("m2.0")
    assert oslo is not None and "arguments_error" not in oslo.metadata


def test_roles_types_steps_and_the_final_answer() -> None:
    t = _load(FIXTURES / "messages_tool_calls.json")
    assert [(e.id, e.type, e.step_index) for e in t.events] == [
        ("m1", EventType.USER_INPUT, 1),
        ("m2.0", EventType.TOOL_CALL, 2),
        ("m2.1", EventType.TOOL_CALL, 2),
        ("m3", EventType.TOOL_RESULT, 3),
        ("m4", EventType.TOOL_RESULT, 4),
        ("m5", EventType.LLM_RESPONSE, 5),
        ("m5.0", EventType.TOOL_CALL, 5),
        ("m6", EventType.TOOL_RESULT, 6),
        ("m7", EventType.FINAL_ANSWER, 7),
    ]
    assert t.event("m5.0") is not None and t.event("m5.0").parent_id == "m5"  # type: ignore[union-attr]
    assert t.outcome.final_answer == "Oslo is 4°C with rain; Paris is 12°C and sunny."
    assert t.goal == "Find the weather in Oslo and Paris"
    assert t.metadata["app"] == "weather-bot"
    assert t.metadata["system_prompt"] == "You are a weather assistant. Use the tools."
    assert t.agents[0].name == "assistant"
    assert t.agents[0].instructions == "You are a weather assistant. Use the tools."
    assert t.id == "messages-messages_tool_calls"


def test_a_plain_list_of_messages() -> None:
    t = _load(FIXTURES / "messages_plain_list.json")
    assert [e.type for e in t.events] == [EventType.USER_INPUT, EventType.FINAL_ANSWER]
    assert t.events[1].agent_name == "greeter"
    assert t.goal == "Say hi"


def test_no_final_answer_when_the_run_ends_on_a_tool_call(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "thinking"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
                    ],
                },
            ]
        )
    )
    t = _load(path)
    assert [e.type for e in t.events] == [
        EventType.USER_INPUT,
        EventType.LLM_RESPONSE,
        EventType.TOOL_CALL,
    ]
    assert t.events[2].input == {}
    assert t.outcome.final_answer is None


def test_a_tool_result_with_an_unknown_call_id_is_kept_unlinked(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "nope", "content": "x"},
            ]
        )
    )
    t = _load(path)
    assert t.events[1].parent_id is None
    assert t.events[1].metadata["unmatched_tool_call"] is True


def test_one_conversation_per_json_line(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    lines = [
        {"id": "first", "messages": [{"role": "user", "content": "a"}]},
        {"messages": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    runs = import_file(path, importers=IMPORTERS)
    assert [r.trajectory.id for r in runs] == ["first", "messages-chats-2"]


@pytest.mark.parametrize(
    ("messages", "record", "field", "words"),
    [
        (
            [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}],
            1,
            "messages[1].role",
            "unknown role 'robot'",
        ),
        ([{"role": "user", "content": 5}], 0, "messages[0].content", "string or a list"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}],
            0,
            "messages[0].tool_calls[0].function.name",
            "missing tool name",
        ),
        (
            [{"role": "assistant", "tool_calls": "f()"}],
            0,
            "messages[0].tool_calls",
            "expected a list",
        ),
        ([], None, "messages", "no events"),
        ([{"role": "system", "content": "only rules"}], None, "messages", "no events"),
    ],
)
def test_bad_messages_name_record_and_field(
    tmp_path: Path, messages: list[object], record: int | None, field: str, words: str
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.record == record
    assert info.value.field == field
    assert words in str(info.value)
    assert "chat.json" in str(info.value)


def test_a_message_list_with_a_bad_role_names_the_record_and_field(tmp_path: Path) -> None:
    from agentdebug.errors import UnknownFormatError
    from agentdebug.io import import_file

    for doc, said in [
        (
            [{"role": "user", "content": "hi"}, {"role": 5, "content": "x"}],
            "messages: record 1, field 'role': 5 is not a message role (assistant, ",
        ),
        (
            [{"role": "user", "content": "hi"}, {"content": "x"}],
            "messages: record 1: no field 'role'",
        ),
    ]:
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(UnknownFormatError) as info:
            import_file(path)
        assert said in str(info.value) and "chat.json" in str(info.value)


def test_one_bad_conversation_line_skips_only_that_record() -> None:
    from agentdebug.errors import RecordsSkipped

    with pytest.raises(RecordsSkipped) as info:
        import_file(FIXTURES / "messages_onebad.jsonl", importers=IMPORTERS)
    assert [r.trajectory.id for r in info.value.runs] == [
        "messages-messages_onebad-1",
        "messages-messages_onebad-3",
    ]
    (error,) = info.value.errors
    assert "messages_onebad.jsonl, line 2, field 'messages[1].content'" in str(error)
    assert "got number" in str(error)


def test_a_batch_keeps_the_good_conversations_and_reports_the_bad_one() -> None:
    from agentdebug.io import import_paths

    batch = import_paths([FIXTURES / "messages_onebad.jsonl"], importers=IMPORTERS)
    assert len(batch.runs) == 2
    ((_, said),) = batch.failures
    assert "line 2, field 'messages[1].content'" in said


def test_anthropic_tool_use_and_tool_result_blocks_are_tool_calls_and_results() -> None:
    t = _load(FIXTURES / "messages_anthropic.json")
    assert [(e.id, e.type) for e in t.events] == [
        ("m0", EventType.USER_INPUT),
        ("m1", EventType.LLM_RESPONSE),
        ("m1.0", EventType.TOOL_CALL),
        ("m2.0", EventType.TOOL_RESULT),
        ("m3", EventType.FINAL_ANSWER),
    ]
    call, result = t.events[2], t.events[3]
    assert call.input == {"city": "Paris"} and call.metadata["tool_name"] == "get_weather"
    assert call.metadata["tool_call_id"] == "toolu_1"
    assert result.parent_id == "m1.0" and result.output == "TimeoutError: timed out"
    assert result.error is not None and result.error.message == "TimeoutError: timed out"
    assert result.metadata["tool_name"] == "get_weather"


def test_anthropic_system_thinking_and_images(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    image = {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
    path.write_text(
        json.dumps(
            {
                "system": [{"type": "text", "text": "Be brief."}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "what is it?"}, image]},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "looks like a cat", "signature": "s"},
                            {"type": "text", "text": "A cat."},
                        ],
                    },
                ],
            }
        )
    )
    t = _load(path)
    assert t.agents[0].instructions == "Be brief."
    assert t.events[0].metadata["content_parts"] == [image]
    assert [(e.type, e.output) for e in t.events[1:]] == [
        (EventType.REASONING, "looks like a cat"),
        (EventType.FINAL_ANSWER, "A cat."),
    ]


def test_the_response_choice_is_the_final_assistant_message() -> None:
    t = _load(FIXTURES / "messages_with_choices.json")
    last = t.events[-1]
    assert last.type is EventType.FINAL_ANSWER and last.step_index == 7
    assert last.output == "Your flight UA 1234 is booked successfully!"
    assert last.metadata["fields"] == {"finish_reason": "stop"}
    assert t.outcome.final_answer == "Your flight UA 1234 is booked successfully!"
    assert t.metadata["model"] == "gpt-4o"


def test_a_content_part_of_an_unknown_type_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    content = [{"type": "text", "text": "hi"}, {"type": "hologram", "data": "x"}]
    path.write_text(json.dumps({"messages": [{"role": "user", "content": content}]}))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "messages[0].content[1].type"
    assert "unknown content part type 'hologram'" in str(info.value)


def test_fields_not_read_into_events_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            {
                "temperature": 0.2,
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                ],
            }
        )
    )
    t = _load(path)
    assert t.metadata["fields"] == {"temperature": 0.2}
    assert t.outcome.final_answer == "I can't help with that."
    assert t.events[1].metadata["refusal"] is True


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        (
            {"messages": [{"role": "user", "content": "a"}], "choices": [{"text": "b"}]},
            "choices[0].message",
            "missing",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "y"}],
                    }
                ]
            },
            "messages[0].content[0].is_error",
            "expected true or false",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]},
            "messages[0].content[0].name",
            "missing tool name",
        ),
    ],
)
def test_bad_blocks_and_choices_name_their_field(
    tmp_path: Path, doc: dict[str, object], field: str, words: str
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == field and words in str(info.value)
