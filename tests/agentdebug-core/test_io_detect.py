"""Format detection, forced formats, and batch imports that go on past bad files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentdebug.errors import InputError, NotFoundError, UnknownFormatError
from agentdebug.io import (
    builtin_importers,
    detect_importer,
    import_file,
    import_paths,
    read_source,
)
from agentdebug.schema import EventType
from agentdebug.stages import ImportedRun, Importer, Source

FIXTURES = Path(__file__).parent / "fixtures" / "io"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("whowhen_small_hc.json", "whowhen"),
        ("whowhen_small_ag.json", "whowhen"),
        ("trail_small.json", "trail"),
        ("otlp_two_traces.json", "otlp"),
        ("messages_tool_calls.json", "messages"),
        ("messages_plain_list.json", "messages"),
        ("events_trajectory.json", "events"),
        ("events_list.json", "events"),
        ("events_lines.jsonl", "events"),
        ("events_missing_type.json", "events"),
    ],
)
def test_each_format_is_detected(fixture: str, expected: str) -> None:
    source = read_source(FIXTURES / fixture)
    assert detect_importer(source, builtin_importers()).name == expected


def test_builtin_order_is_most_specific_first() -> None:
    assert [i.name for i in builtin_importers()] == [
        "whowhen",
        "trail",
        "otlp",
        "messages",
        "phoenix",
        "events",
    ]
    assert all(isinstance(i, Importer) and i.description for i in builtin_importers())


def test_an_unknown_file_names_every_importer_tried_and_why() -> None:
    with pytest.raises(UnknownFormatError) as info:
        import_file(FIXTURES / "unknown_format.json", importers=builtin_importers())
    error = info.value
    assert set(error.refusals) == {"whowhen", "trail", "otlp", "messages", "phoenix", "events"}
    message = str(error)
    assert "unknown_format.json" in message
    for name, reason in error.refusals.items():
        assert f"{name}: {reason}" in message
    assert error.refusals["whowhen"] == "no 'history' list"
    assert error.refusals["events"] == "no 'events' field"


def test_the_registry_supplies_the_importers_by_default() -> None:
    runs = import_file(FIXTURES / "otlp_two_traces.json")
    assert len(runs) == 2


def test_a_forced_format_is_used_or_refused_with_its_reason() -> None:
    runs = import_file(
        FIXTURES / "events_list.json", importers=builtin_importers(), format="events"
    )
    assert runs[0].trajectory.id == "events_list"
    with pytest.raises(InputError, match="not a 'whowhen' file: no 'history' list"):
        import_file(
            FIXTURES / "events_trajectory.json", importers=builtin_importers(), format="whowhen"
        )
    with pytest.raises(NotFoundError, match="unknown import format 'csv'"):
        import_file(FIXTURES / "events_list.json", importers=builtin_importers(), format="csv")


class _Broken:
    """An importer with bugs, as a third-party plugin might have."""

    name = "broken"
    description = "raises raw Python errors"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def sniff(self, source: Source) -> str | None:
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        raise self.error
        yield  # pragma: no cover


@pytest.mark.parametrize(
    ("error", "field", "words"),
    [
        (KeyError("steps"), "steps", "missing"),
        (TypeError("'int' object is not iterable"), None, "TypeError"),
        (ValueError("bad"), None, "ValueError"),
    ],
)
def test_raw_errors_from_an_importer_become_input_errors(
    error: Exception, field: str | None, words: str
) -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "events_list.json", importers=[_Broken(error)])
    assert info.value.source is not None and info.value.source.endswith("events_list.json")
    assert info.value.field == field
    assert words in str(info.value)


def test_a_pydantic_error_from_an_importer_names_the_field_path() -> None:
    from agentdebug.schema import AgentTrajectory
    from pydantic import ValidationError

    try:
        AgentTrajectory.model_validate(
            {
                "id": "x",
                "events": [{"id": "a", "type": "message", "step_index": 0}] * 3
                + [{"id": "b", "type": "message", "step_index": "abc"}],
            }
        )
    except ValidationError as exc:
        validation_error = exc
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "events_list.json", importers=[_Broken(validation_error)])
    assert info.value.field == "events[3].step_index"


def test_a_sniff_that_crashes_counts_as_a_refusal() -> None:
    class Crashy:
        name = "crashy"
        description = "sniff raises"

        def sniff(self, source: Source) -> str | None:
            raise RuntimeError("oops")

        def load(self, source: Source) -> Iterator[ImportedRun]:  # pragma: no cover
            yield from ()

    source = read_source(FIXTURES / "events_list.json")
    assert detect_importer(source, [Crashy(), *builtin_importers()]).name == "events"


def test_a_folder_import_goes_on_past_bad_files_and_reports_each(tmp_path: Path) -> None:
    good = ["events_list.json", "messages_tool_calls.json", "otlp_two_traces.json"]
    bad = ["truncated.json", "unknown_format.json", "events_bad_step.json"]
    nested = tmp_path / "nested"
    nested.mkdir()
    for name in good[:2] + bad[:2]:
        shutil.copy(FIXTURES / name, tmp_path / name)
    for name in good[2:] + bad[2:]:
        shutil.copy(FIXTURES / name, nested / name)
    (tmp_path / "latin1.jsonl").write_bytes(b'{"x": "\xff"}\n')
    (tmp_path / "notes.txt").write_text("ignored: not .json")
    hidden = tmp_path / ".cache"
    hidden.mkdir()
    (hidden / "skip.json").write_text("{")

    batch = import_paths([tmp_path, tmp_path / "missing.json"], importers=builtin_importers())
    failed = {path.name: why for path, why in batch.failures}
    assert set(failed) == {
        "truncated.json",
        "unknown_format.json",
        "events_bad_step.json",
        "latin1.jsonl",
        "missing.json",
    }
    assert "not valid JSON" in failed["truncated.json"]
    assert "no importer recognises" in failed["unknown_format.json"]
    assert "events[2].step_index" in failed["events_bad_step.json"]
    assert "not UTF-8" in failed["latin1.jsonl"]
    assert "no such file" in failed["missing.json"]
    assert all(str(path) in why for path, why in batch.failures)
    assert sorted(p.name for p in batch.files) == sorted(good)
    assert len(batch.runs) == 1 + 1 + 2
    assert not batch.ok


def test_folder_files_are_taken_in_sorted_order(tmp_path: Path) -> None:
    for name in ("b.json", "a.json"):
        (tmp_path / name).write_text(json.dumps([{"type": "message", "output": name}]))
    (tmp_path / "c.jsonl").write_text('{"type": "message"}\n{"type": "message"}\n')
    batch = import_paths([tmp_path], importers=builtin_importers())
    assert [p.name for p in batch.files] == ["a.json", "b.json", "c.jsonl"]
    assert batch.ok


@pytest.mark.slow
@pytest.mark.skipif(
    not DATA.is_dir(), reason=f"benchmark data not found at {DATA} (../shared/data)"
)
def test_all_benchmark_data_is_detected_and_imported() -> None:
    import time

    start = time.perf_counter()
    batch = import_paths([DATA / "whowhen", DATA / "trail" / "gaia" / "traces"])
    elapsed = time.perf_counter() - start
    print(f"\nall of ../shared/data (155 Who&When + 72 TRAIL files): {elapsed:.2f}s")
    assert batch.failures == []
    frameworks = {r.trajectory.framework for r in batch.runs}
    assert frameworks == {"ag2", "magentic-one", "smolagents"}
    assert len(batch.runs) == 155 + 72


@pytest.mark.parametrize("name", ["runs.jsonl", "runs.db"])
def test_a_stores_file_given_to_import_says_to_give_it_as_the_store(
    tmp_path: Path, name: str
) -> None:
    """A user who gives a store's file to ``ingest`` or ``diagnose`` is told to give
    it with --store (before: "no importer recognises this file", or for SQLite
    "not UTF-8 text")."""
    from agentdebug.store import open_store
    from conftest import ev, traj

    store = tmp_path / name
    opened = open_store(store)
    opened.save_trajectory(traj(ev(0, EventType.USER_INPUT, None, input="hi")))
    opened.close()
    with pytest.raises(InputError) as caught:
        import_file(store)
    text = str(caught.value)
    assert str(store) in text and "not a trace to import" in text
    assert "agentdebug --store FILE list" in text
