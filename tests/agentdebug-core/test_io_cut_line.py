"""A JSON Lines file whose last line a logger killed mid-write cut off. A review found
it imported nothing (the whole file refused), and `diagnose FILE` exited 1, where a
bad field on that line cost only its own run."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import import_file
from conftest import run_cli

GOOD = '{"messages":[{"role":"user","content":"Book a table"},{"role":"assistant","content":"Booked."}]}'
CUT = '{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"he'


def test_a_cut_off_line_costs_only_its_own_run(tmp_path: Path) -> None:
    path = tmp_path / "convs.jsonl"
    path.write_text(f"{GOOD}\n{GOOD.replace('table', 'room')}\n{CUT}\n")
    with pytest.raises(RecordsSkipped) as skipped:
        import_file(path)
    assert len(skipped.value.runs) == 2
    (error,) = skipped.value.errors
    assert str(error).startswith(f"{path}, line 3: not valid JSON")
    said = run_cli("--store", str(tmp_path / "store"), "diagnose", str(path), "--no-store")
    assert said.returncode == 0, said.stderr
    assert "line 3: not valid JSON" in said.stderr and said.stdout.count("Diagnosis of run") == 2


def test_a_file_mostly_not_json_lines_is_still_refused_whole(tmp_path: Path) -> None:
    """Lines that are not JSON among few that are (a pretty-printed document, text)
    are the file's error, not records to skip; and a JSON message that ends in "at"
    is not said twice ("Invalid control character at at line 3")."""
    path = tmp_path / "notes.jsonl"
    path.write_text(f"{GOOD}\nnot json\nnor this\nnor that\n")
    with pytest.raises(InputError) as refused:
        import_file(path)
    assert not isinstance(refused.value, RecordsSkipped)
    assert f"{path}, line 2: not valid JSON" in str(refused.value)
    path.write_text('{"a": 1}\n{"a": "x\ty"}\n')
    with pytest.raises(InputError) as refused:
        import_file(path)
    assert " at at " not in str(refused.value)
