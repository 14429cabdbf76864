"""OTLP attribute values of the wrong type are errors naming where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import import_file


def test_an_int_value_that_is_no_integer_is_an_error_naming_it(tmp_path: Path) -> None:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b175",
        "name": "ChatCompletion",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
            {"key": "llm.token_count.prompt", "value": {"intValue": "many"}},
        ],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    with pytest.raises(InputError) as caught:
        import_file(path)
    message = str(caught.value)  # before: imported, the token count silently empty
    assert str(path) in message and "eee19b7ec3c1b175" in message
    assert "attributes[1].value.intValue" in message and "'many'" in message
