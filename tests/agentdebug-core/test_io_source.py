"""Reading files: one strict parse, and errors that say where the file is broken."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import import_file, read_source

FIXTURES = Path(__file__).parent / "fixtures" / "io"


def test_one_json_document_is_parsed_once() -> None:
    source = read_source(FIXTURES / "events_list.json")
    assert isinstance(source.document, list)
    assert source.records is None


def test_json_lines_become_records_and_blank_lines_are_skipped() -> None:
    source = read_source(FIXTURES / "events_lines.jsonl")
    assert source.document is None
    assert source.records is not None and len(source.records) == 2


def test_json_lines_are_recognised_without_the_jsonl_suffix(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text('{"a": 1}\n{"a": 2}\n\n{"a": 3}\n')
    source = read_source(path)
    assert source.records == [{"a": 1}, {"a": 2}, {"a": 3}]


def test_a_pretty_printed_document_in_a_jsonl_file_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "pretty.jsonl"
    path.write_text('{\n  "a": 1\n}\n')
    assert read_source(path).document == {"a": 1}


def test_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert read_source(path).document == {"a": 1}


def test_truncated_json_names_the_file_and_the_position() -> None:
    with pytest.raises(InputError) as info:
        read_source(FIXTURES / "truncated.json")
    message = str(info.value)
    assert "truncated.json" in message
    assert "not valid JSON" in message
    assert "line 4" in message


def test_text_that_is_not_json_at_all() -> None:
    with pytest.raises(InputError) as info:
        read_source(FIXTURES / "not_json.json")
    assert "not_json.json" in str(info.value)
    assert "not valid JSON" in str(info.value)
    assert "line 1, column 1" in str(info.value)


def test_non_utf8_bytes_name_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(InputError) as info:
        read_source(path)
    message = str(info.value)
    assert str(path) in message
    assert "not UTF-8" in message
    assert "byte offset 13" in message
    assert "e9" in message


def test_a_bad_line_in_json_lines_names_the_line(tmp_path: Path) -> None:
    """A line that is not JSON among records is set aside, naming its line, for the
    record it held alone to be skipped (test_io_cut_line)."""
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "message"}\n{"type": "message"}\n{"type": \n')
    records = read_source(path).records
    assert records is not None and len(records) == 2
    (error,) = getattr(records, "unreadable", [])
    assert str(error).startswith(f"{path}, line 3: not valid JSON: ")
    assert "record" not in str(error)


def test_a_bad_later_line_without_the_jsonl_suffix_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text('{"type": "message"}\n\n{"type": "message"\n')
    (error,) = getattr(read_source(path).records, "unreadable", [])
    assert str(error).startswith(f"{path}, line 3: not valid JSON")  # (the blank line counts)


@pytest.mark.parametrize("content", [b"", b"   \n\n  "])
def test_an_empty_file_is_an_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty"):
        read_source(path)


def test_a_file_holding_only_null_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "null.json"
    path.write_text("null")
    with pytest.raises(InputError, match="null"):
        read_source(path)


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_source(tmp_path / "nope.json")


def test_a_file_over_the_size_limit_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"padding": "' + "x" * 5000 + '"}')
    monkeypatch.setenv("AGENTDEBUG_MAX_IMPORT_BYTES", "1000")
    with pytest.raises(InputError) as info:
        read_source(path)
    assert "over the import limit of 1,000 bytes" in str(info.value)
    assert "AGENTDEBUG_MAX_IMPORT_BYTES" in str(info.value)
    # and the argument wins over the environment
    assert read_source(path, max_bytes=10_000).document is not None


def test_a_log_or_txt_file_holding_json_is_read_as_json(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes((FIXTURES / "events_lines.jsonl").read_bytes())
    source = read_source(path)
    assert source.records is not None and source.text is None
    assert import_file(path)  # the events importer takes it, as before


def test_a_plain_text_file_is_handed_over_as_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Thought: look it up\nAction: search\n")
    source = read_source(path)
    assert source.document is None and source.records is None
    assert source.text == "Thought: look it up\nAction: search\n"
    with pytest.raises(InputError, match="no importer recognises this file"):
        import_file(path)  # no core importer reads free text
