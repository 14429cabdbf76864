"""OTLP imports that must not lose more than they have to: a trace nested deeper
than Python's recursion limit imports (before: RecursionError, every file of the
batch failed); one bad span costs its own trace, not the export's other traces
(before: the whole file refused); and a trace that fails unexpectedly costs that
trace only, named with its file (before: every file of the batch, no file named)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import OtlpImporter, import_file, import_paths
from agentdebug.io import otlp as otlp_module
from agentdebug.io.otel import spans_to_trajectory
from agentdebug.schema import EventType
from conftest import run_cli

IMPORTERS = [OtlpImporter()]
T1, T2, T3 = "1" * 32, "2" * 32, "3" * 32
BAD_INT = {"key": "retry.count", "value": {"intValue": "abc"}}
T0 = 1_700_000_000_000_000_000


def _span(trace: str, n: int, parent: int | None = None, **fields: Any) -> dict[str, Any]:
    """Span ``n`` of ``trace`` (its id: the trace's first digit, then ``n``)."""
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{trace[0]}{n:015x}",
        "name": f"step{n}",
        "startTimeUnixNano": str(T0 + n),
        "endTimeUnixNano": str(T0 + 1_000_000_000 + n),
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        ],
    }
    if parent is not None:
        span["parentSpanId"] = f"{trace[0]}{parent:015x}"
    span.update(fields)
    return span


def _trace(trace: str, *, bad: bool = False) -> list[dict[str, Any]]:
    """An agent span and two steps under it; ``bad``: the second step's attribute
    is ``{"intValue": "abc"}``."""
    agent = _span(trace, 1, name="planner")
    agent["attributes"] = [{"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}}]
    last = _span(trace, 3, 1)
    if bad:
        last["attributes"] = [*last["attributes"], BAD_INT]
    return [agent, _span(trace, 2, 1), last]


def _export(*spans: dict[str, Any], resource: Any = None) -> dict[str, Any]:
    resource_spans: dict[str, Any] = {"scopeSpans": [{"spans": list(spans)}]}
    if resource is not None:
        resource_spans["resource"] = {"attributes": resource}
    return {"resourceSpans": [resource_spans]}


def _deep(depth: int, *, reverse: bool = False) -> dict[str, Any]:
    """One trace of ``depth`` spans, each a child of the one before (a recursive agent)."""
    spans = [_span(T1, 1, name="planner")]
    spans[0]["attributes"] = [{"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}}]
    spans += [_span(T1, n, n - 1) for n in range(2, depth + 1)]
    return _export(*(reversed(spans) if reverse else spans))


def _ids(runs: list[Any]) -> list[str]:
    return sorted(r.trajectory.id for r in runs)


# -- fault 3: a deep trace; an unexpected failure in one trace ---------------------------


@pytest.mark.parametrize("reverse", [False, True], ids=["parents-first", "children-first"])
def test_a_trace_nested_deeper_than_the_recursion_limit_imports_in_order(
    tmp_path: Path, reverse: bool
) -> None:
    depth = sys.getrecursionlimit() + 200
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(_deep(depth, reverse=reverse)))

    (run,) = import_file(path, importers=IMPORTERS)

    events = run.trajectory.events
    assert [e.module for e in events] == ["planner"] + [f"step{n}" for n in range(2, depth + 1)]
    assert [e.step_index for e in events] == list(range(depth))
    assert events[0].type is EventType.AGENT_START and events[0].parent_id is None
    assert all(e.parent_id == events[i].id for i, e in enumerate(events[1:]))
    assert {e.agent_name for e in events} == {"planner"}  # (found up 1,000+ parents)


def test_a_deep_trace_beside_a_good_file_imports_both_and_diagnose_works(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "deep.json").write_text(json.dumps(_deep(1000)))
    (folder / "good.json").write_text(json.dumps(_export(*_trace(T2))))

    batch = import_paths([folder])

    assert batch.failures == []
    assert _ids(batch.runs) == [T1, T2]
    result = run_cli("diagnose", str(folder / "deep.json"), "--no-store")
    assert result.returncode == 0, result.stderr
    assert "1000 events" in result.stdout


def test_a_trace_that_fails_unexpectedly_costs_that_trace_only_named_with_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = spans_to_trajectory

    def failing(spans: Any, **kw: Any) -> Any:
        if kw["trajectory_id"] == T1:
            raise RuntimeError("boom")
        return build(spans, **kw)

    monkeypatch.setattr(otlp_module, "spans_to_trajectory", failing)
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "a_failing.json").write_text(json.dumps(_export(*_trace(T1))))
    (folder / "b_good.json").write_text(json.dumps(_export(*_trace(T2))))

    batch = import_paths([folder])

    assert _ids(batch.runs) == [T2]
    ((where, said),) = batch.failures
    assert where == folder / "a_failing.json"
    assert said.startswith(f"{folder / 'a_failing.json'}: trace '{T1}' not imported: ")
    assert "unexpected RuntimeError: boom" in said
    # One file, one trace: still a bug in agentdebug (the CLI's exit 3), not the file's fault.
    with pytest.raises(RuntimeError, match="boom"):
        import_file(folder / "a_failing.json", importers=IMPORTERS)


def test_a_batch_whose_joining_fails_unexpectedly_names_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any, items: Any) -> Any:
        raise RuntimeError("joining broke")
        yield  # (a generator, as the real one is)

    monkeypatch.setattr(OtlpImporter, "load_gathered", broken)
    for name, trace in (("a.json", T1), ("b.json", T2)):
        (tmp_path / name).write_text(json.dumps(_export(*_trace(trace))))

    batch = import_paths([tmp_path / "a.json", tmp_path / "b.json"])

    assert [(where.name, said) for where, said in batch.failures] == [
        (name, f"{tmp_path / name}: unexpected RuntimeError: joining broke")
        for name in ("a.json", "b.json")
    ]


# -- fault 4: one bad span among several traces -----------------------------------------


def _skipped(path: Path) -> RecordsSkipped:
    with pytest.raises(RecordsSkipped) as info:
        import_file(path, importers=IMPORTERS)
    return info.value


def test_json_lines_of_three_traces_with_one_bad_span_import_the_other_two(
    tmp_path: Path,
) -> None:
    path = tmp_path / "collector.jsonl"
    lines = [_export(*_trace(T1)), _export(*_trace(T2, bad=True)), _export(*_trace(T3))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    skipped = _skipped(path)

    assert _ids(skipped.runs) == [T1, T3]
    (error,) = skipped.errors
    assert str(error) == (
        f"{path}, line 2, record 2000000000000003, "
        "field 'resourceSpans[0].scopeSpans[0].spans[2].attributes[1].value.intValue': "
        f"trace '{T2}' not imported: expected an integer (OTLP intValue), got 'abc'"
    )


def test_one_document_of_three_traces_with_one_bad_span_imports_the_other_two(
    tmp_path: Path,
) -> None:
    path = tmp_path / "export.json"
    doc = {
        "resourceSpans": [
            _export(*_trace(t, bad=t == T2))["resourceSpans"][0] for t in (T1, T2, T3)
        ]
    }
    path.write_text(json.dumps(doc))

    skipped = _skipped(path)

    assert _ids(skipped.runs) == [T1, T3]
    (error,) = skipped.errors
    assert error.source == str(path) and error.record == "2000000000000003"
    assert error.field == "resourceSpans[1].scopeSpans[0].spans[2].attributes[1].value.intValue"
    assert f"trace '{T2}' not imported" in str(error)


def test_ingest_imports_the_good_traces_and_lists_the_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "collector.jsonl"
    lines = [_export(*_trace(T1)), _export(*_trace(T2, bad=True)), _export(*_trace(T3))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    result = run_cli("ingest", str(path))

    said = result.stdout + result.stderr
    assert result.returncode == 1  # (a file failed in part)
    assert "imported 2 run(s)" in said
    assert "collector.jsonl, line 2, record 2000000000000003, field " in said
    assert f"trace '{T2}' not imported: expected an integer (OTLP intValue)" in said
    listed = run_cli("list", "--json")
    assert sorted(json.loads(line)["id"] for line in listed.stdout.splitlines()) == [T1, T3]


def test_a_bad_resource_attribute_costs_the_traces_of_that_resource_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "export.json"
    good = _export(*_trace(T1))["resourceSpans"][0]
    bad = _export(*_trace(T2), resource=[None])["resourceSpans"][0]
    path.write_text(json.dumps({"resourceSpans": [good, bad]}))

    skipped = _skipped(path)

    assert _ids(skipped.runs) == [T1]
    (error,) = skipped.errors
    assert error.field == "resourceSpans[1].resource.attributes[0]"
    assert f"trace '{T2}' not imported" in str(error)


def test_a_trace_split_across_files_with_a_bad_span_is_not_imported_in_part(
    tmp_path: Path,
) -> None:
    """A collector rotated its file mid-trace: the trace's bad span is in the second
    file. The trace is not imported from the first file's spans alone; it is listed
    under the file holding the bad span, and the other trace is imported."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    agent, step, last = _trace(T2, bad=True)
    first.write_text(json.dumps(_export(agent, step, *_trace(T1))) + "\n")
    second.write_text(json.dumps(_export(last)) + "\n")

    batch = import_paths([first, second])

    assert _ids(batch.runs) == [T1]
    ((where, said),) = batch.failures
    assert where == second
    assert said.startswith(f"{second}, line 1, record 2000000000000003, field ")
    assert f"trace '{T2}' not imported: expected an integer" in said


def test_a_file_whose_only_trace_is_bad_says_so_in_one_error(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_export(*_trace(T2, bad=True))))

    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)

    assert not isinstance(info.value, RecordsSkipped)
    assert info.value.field is not None and info.value.field.endswith(".value.intValue")
    assert str(info.value).startswith(f"{path}, record 2000000000000003, field ")
    assert f"trace '{T2}' not imported: expected an integer" in str(info.value)
