"""A broken plugin is the plugin's bug: skipped, named, listed as broken; the rest
of agentdebug goes on. The plugins here are installed for real: a module and a
``.dist-info`` folder with its entry points, on the path, which
``importlib.metadata`` finds as it finds any installed distribution."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import pytest
from agentdebug.plugins import get_registry, reset_registry
from agentdebug.schema import AgentTrajectory
from conftest import EXAMPLES, run_cli

# A plugin that misbehaves on demand: $FAULTS, comma-separated flags.
FAULTY = """
import os
from agentdebug import hookimpl
from agentdebug.taxonomy import Category, FailureMode

def on(flag):
    return flag in os.environ.get("FAULTS", "").split(",")

if on("import"):
    raise RuntimeError("missing API key")

class Quiet:
    name = "faulty-quiet"
    def detect(self, trajectory):
        return []

class Nameless:
    def detect(self, trajectory):
        return []

@hookimpl
def agentdebug_detectors():
    if on("raises"):
        raise RuntimeError("hook bug")
    if on("one"):
        return Quiet()
    if on("nameless"):
        return [Nameless(), Quiet()]
    return [Quiet()]

@hookimpl
def agentdebug_failure_modes():
    if on("strings"):
        return ["action.some_string"]
    if on("clash"):
        return [FailureMode(id="action.repeated_action", name="HIJACKED",
            category=Category.SYSTEM, definition="the plugin's own meaning", evidence="x",
            remedy="HIJACKED REMEDY", source="faulty")]
    return []
"""

# A plugin that works: a failure mode, a detector of it, and a text importer.
TIDY = """
import os, re
from agentdebug import AgentEvent, AgentTrajectory, Evidence, Finding, Outcome, hookimpl
from agentdebug.stages import ImportedRun
from agentdebug.taxonomy import Category, FailureMode

LEAK = FailureMode(id="action.secret_leaked", name="Secret leaked", category=Category.ACTION,
    definition="An agent prints an API key.", evidence="sk-... in output.",
    remedy="Never echo credentials.", source="tidy")

class SecretDetector:
    name = "tidy-secret"
    def detect(self, trajectory):
        for e in trajectory.events:
            m = re.search(r"sk-[A-Za-z0-9]{8,}", e.output if isinstance(e.output, str) else "")
            if m:
                yield Finding(detector=self.name, mode_id=LEAK.id, message="a key leaked",
                    event_id=e.id, step_index=e.step_index, agent_name=e.agent_name,
                    confidence=0.9, evidence=[Evidence(event_id=e.id, field="output",
                    quote=m.group(0))])

class PipeLog:
    '''PIPELOG v1: '#PIPELOG v1 goal=...', then 'step|agent|type|text' lines.'''
    name = "pipelog"
    description = "PIPELOG v1 text logs"
    def sniff(self, source):
        if source.text is None:
            return "not a text file"
        return None if source.text.startswith("#PIPELOG v1") else "no '#PIPELOG v1' header"
    def load(self, source):
        lines = source.text.splitlines()
        events = []
        for n, line in enumerate(lines[1:], 2):
            step, agent, typ, text = line.split("|", 3)
            events.append(AgentEvent(id=f"l{n}", type=typ, step_index=int(step),
                agent_name=agent, output=text))
        yield ImportedRun(AgentTrajectory(id=source.path.stem,
            goal=lines[0].partition("goal=")[2], framework="pipelog", events=events,
            outcome=Outcome(status="failure")))

if os.environ.get("PIPELOG_SUFFIXES") != "none":
    PipeLog.suffixes = (".pipelog", "LOG")

@hookimpl
def agentdebug_failure_modes():
    return [LEAK]

@hookimpl
def agentdebug_detectors():
    return [SecretDetector()]

@hookimpl
def agentdebug_importers():
    return [PipeLog()]
"""

PIPELOG = (
    "#PIPELOG v1 goal=Summarise account settings\n"
    "0|planner|plan|Look up the settings\n"
    "1|fetcher|tool.call|get_settings()\n"
    "2|writer|final_answer|Your key is sk-ABCDEF1234567890.\n"
)


def install(site: Path, dist: str, module: str, code: str, entry_point: str) -> None:
    """``module`` as the distribution ``dist`` 0.3.0 installs it, with one entry
    point in group ``agentdebug``."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(code)
    info = site / f"{dist.replace('-', '_')}-0.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3.0\n")
    (info / "entry_points.txt").write_text(f"[agentdebug]\n{entry_point} = {module}\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    install(site, "agentdebug-faulty", "faulty_plugin", FAULTY, "faulty")
    install(site, "agentdebug-tidy", "tidy_plugin", TIDY, "tidy")
    return site


@pytest.fixture
def installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The two plugins installed in this process too (imported afresh)."""
    monkeypatch.syspath_prepend(str(site))
    for module in ("faulty_plugin", "tidy_plugin"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    reset_registry()
    return site


def env(site: Path, **more: str) -> dict[str, str]:
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, **more}


def _booking() -> AgentTrajectory:
    return AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())


def block(listed: str, header: str) -> list[str]:
    """The lines `agentdebug plugins` prints under one plugin's ``header`` line."""
    lines = listed.splitlines()
    at = lines.index(f"  {header}")
    out = []
    for line in lines[at + 1 :]:
        if not line.startswith("    "):
            break
        out.append(line.strip())
    return out


def leak_run(tmp_path: Path) -> Path:
    path = tmp_path / "leak.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "What is my key?"},
                {"role": "assistant", "content": "Your key is sk-ABCDEF1234567890."},
            ]
        )
    )
    return path


# -- 1. one broken plugin does not break agentdebug ------------------------------------


def test_a_plugin_that_raises_on_import_is_skipped_and_listed_as_broken(
    site: Path, tmp_path: Path
) -> None:
    faults = env(site, FAULTS="import")
    listed = run_cli("plugins", env=faults)
    assert listed.returncode == 0, listed.stderr
    assert "internal error" not in listed.stderr
    assert block(listed.stdout, "faulty (agentdebug-faulty 0.3.0)") == [
        "broken: cannot be loaded (RuntimeError: missing API key); skipped"
    ]
    assert "plugin 'faulty' (agentdebug-faulty 0.3.0): cannot be loaded" in listed.stderr
    assert "adds failure modes: action.secret_leaked" in block(
        listed.stdout, "tidy (agentdebug-tidy 0.3.0)"
    )

    result = run_cli("diagnose", str(leak_run(tmp_path)), "--format", "json", env=faults)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (
        "plugin 'faulty' (agentdebug-faulty 0.3.0): cannot be loaded "
        "(RuntimeError: missing API key); skipped"
    ) in report["notes"]
    assert any(f["detector"] == "tidy-secret" for f in report["findings"])  # the rest works
    for args in (("taxonomy",), ("ingest", str(leak_run(tmp_path)))):
        other = run_cli(*args, env=faults)
        assert other.returncode == 0, other.stderr
        assert "bug in agentdebug" not in other.stderr


@pytest.mark.parametrize(
    ("faults", "said"),
    [
        ("raises", "agentdebug_detectors raised RuntimeError: hook bug; its detectors are skipped"),
        (
            "one",
            "agentdebug_detectors returned a Quiet, not a list (wrap it in a list); "
            "its detectors are skipped",
        ),
        (
            "strings",
            "agentdebug_failure_modes gave 'action.some_string' (a str), not a FailureMode; "
            "skipped",
        ),
        (
            "nameless",
            "agentdebug_detectors gave a Nameless, which has no 'name' (a non-empty str); skipped",
        ),
    ],
)
def test_a_broken_hook_implementation_is_skipped_with_the_plugin_named(
    site: Path, faults: str, said: str
) -> None:
    listed = run_cli("plugins", env=env(site, FAULTS=faults))
    assert listed.returncode == 0, listed.stderr
    assert f"broken: {said}" in block(listed.stdout, "faulty (agentdebug-faulty 0.3.0)")
    assert f"plugin 'faulty' (agentdebug-faulty 0.3.0): {said}" in listed.stderr
    assert "bug in agentdebug" not in listed.stderr
    assert "tidy-secret" in listed.stdout  # the other plugin's detector is there
    if faults == "nameless":  # (the good detector beside the nameless one is kept)
        assert "faulty-quiet" in listed.stdout


def test_analyze_in_the_agent_goes_on_past_a_broken_plugin(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug import AgentDebug, EventType

    monkeypatch.setenv("FAULTS", "raises")
    debugger = AgentDebug(str(tmp_path / "store"))
    with debugger.trace(goal="g", run_id="lib-run") as t:
        t.record(EventType.TOOL_RESULT, agent_name="w", error="Timeout: x")
        t.record(EventType.FINAL_ANSWER, agent_name="w", output="done sk-ABCDEFGH12345")
        report = t.analyze()
    assert report.root_cause is not None
    assert any(f.detector == "tidy-secret" for f in report.findings)
    assert (
        "plugin 'faulty' (agentdebug-faulty 0.3.0): agentdebug_detectors raised "
        "RuntimeError: hook bug; its detectors are skipped"
    ) in report.notes


# -- 6. a failure mode's clash names the plugin; what each plugin adds is listed ---------


def test_a_failure_mode_clash_names_the_plugin_and_plugins_lists_what_each_added(
    site: Path,
) -> None:
    listed = run_cli("plugins", env=env(site, FAULTS="clash"))
    assert listed.returncode == 0, listed.stderr
    said = (
        "failure mode 'action.repeated_action' is already registered by the built-ins "
        "(agentdebug-core); keeping that one"
    )
    assert block(listed.stdout, "faulty (agentdebug-faulty 0.3.0)") == [
        "adds detectors: faulty-quiet",
        f"warning: {said}",
    ]
    assert f"plugin 'faulty' (agentdebug-faulty 0.3.0): {said}" in listed.stderr
    assert block(listed.stdout, "tidy (agentdebug-tidy 0.3.0)") == [
        "adds failure modes: action.secret_leaked",
        "adds detectors: tidy-secret",
        "adds importers: pipelog",
    ]
    assert "1 added by plugins, listed above" in listed.stdout
    shown = run_cli("taxonomy", env=env(site, FAULTS="clash"))
    assert "HIJACKED" not in shown.stdout  # (the built-in meaning kept)


# -- 5. importers claim their own files ------------------------------------------------


def test_a_folder_import_picks_up_the_suffixes_an_importer_declares(
    site: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "run1.log").write_text(PIPELOG)
    (logs / "run2.pipelog").write_text(PIPELOG.replace("sk-ABCDEF1234567890", "nothing"))
    (logs / "README.md").write_text("notes")
    result = run_cli("ingest", str(logs), env=env(site))
    assert result.returncode == 0, result.stderr
    assert "imported 2 run(s) from 2 file(s)" in result.stdout
    assert (
        "passed over 1 file(s) in the folders given, not named *.json, *.jsonl, *.ndjson, "
        "*.pipelog or *.log (name a file to import it)"
    ) in result.stderr
    listed = run_cli("plugins", env=env(site))
    assert "pipelog (*.pipelog, *.log)" in listed.stdout  # the installed formats


def test_a_file_with_an_importers_own_suffix_is_read_as_text(site: Path, tmp_path: Path) -> None:
    leak = tmp_path / "leak.pipelog"
    leak.write_text(PIPELOG)
    result = run_cli("diagnose", str(leak), "--format", "json", "--no-store", env=env(site))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["trajectory_id"] == "leak"
    assert any(f["detector"] == "tidy-secret" for f in report["findings"])


def test_format_names_an_importer_that_declares_no_suffix_and_it_gets_text(
    site: Path, tmp_path: Path
) -> None:
    leak = tmp_path / "leak.pipelog"
    leak.write_text(PIPELOG)
    plain = env(site, PIPELOG_SUFFIXES="none")
    result = run_cli("ingest", "--format", "pipelog", str(leak), env=plain)
    assert result.returncode == 0, result.stderr
    assert "imported 1 run(s) from 1 file(s)" in result.stdout
    # a JSON importer named for a file that is not JSON still says where it broke
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ')
    wrong = run_cli("ingest", "--format", "whowhen", str(broken), env=plain)
    assert wrong.returncode == 1
    assert f"{broken}: not valid JSON" in wrong.stderr
    # and an importer that reads text, named for a file it refuses, says why
    other = tmp_path / "other.pipelog"
    other.write_text("no header here\n")
    refused = run_cli("ingest", "--format", "pipelog", str(other), env=env(site))
    assert refused.returncode == 1
    assert f"{other}: not a 'pipelog' file: no '#PIPELOG v1' header" in refused.stderr


def test_ingest_help_says_where_the_installed_formats_are_listed() -> None:
    shown = run_cli("ingest", "--help")
    assert shown.returncode == 0
    assert "`agentdebug plugins` lists every importer" in " ".join(shown.stdout.split())


def test_read_source_honours_an_installed_importers_suffixes(
    installed: Path, tmp_path: Path
) -> None:
    from agentdebug.errors import InputError
    from agentdebug.io import read_source

    leak = tmp_path / "leak.pipelog"
    leak.write_text(PIPELOG)
    assert read_source(leak).text == PIPELOG
    with pytest.raises(InputError, match="not valid JSON"):
        read_source(leak, text_suffixes=())  # none declared: JSON it must be


# -- 3. one on_report hook that raises silences no other -------------------------------


def test_a_failing_on_report_hook_does_not_silence_the_others(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl, register_plugin

    seen: list[str] = []

    class Late:
        @hookimpl
        def agentdebug_on_report(self, report: object, trajectory: AgentTrajectory) -> None:
            seen.append(trajectory.id)

    class Boom:
        @hookimpl
        def agentdebug_on_report(self, report: object, trajectory: AgentTrajectory) -> None:
            raise RuntimeError("boom in on_report")

    monkeypatch.setattr(plugins, "_IN_CODE", [])
    register_plugin(Late(), name="late")
    register_plugin(Boom(), name="boom")  # (registered last: pluggy calls it first)
    with caplog.at_level(logging.DEBUG, logger="agentdebug.plugins"):
        diagnose(_booking())
        diagnose(_booking())
    assert seen == ["example-failed-booking"] * 2
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warned] == [
        "plugin 'boom' (registered in code): agentdebug_on_report failed "
        "(RuntimeError: boom in on_report); the other plugins' hooks still run"
    ]
    assert warned[0].exc_info is None  # (one line; the traceback at debug level)


# -- 2. a detector or attributor returning the wrong kind of item ---------------------


def test_a_detector_returning_dicts_is_noted_and_the_diagnosis_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl, register_plugin
    from agentdebug.schema import Finding

    class Dicts:
        name = "dicts"

        def detect(self, trajectory: AgentTrajectory) -> list[object]:
            return [{"mode_id": "action.repeated_action", "message": "a dict"}]

    class Mixed:
        name = "mixed"

        def detect(self, trajectory: AgentTrajectory) -> list[object]:
            last = trajectory.events[-1]
            good = Finding(
                detector=self.name,
                mode_id="verification.invalid_final_output",
                message="mixed's good finding",
                event_id=last.id,
                step_index=last.step_index,
                agent_name=last.agent_name,
            )
            return [good, "a string", "another"]

    class One:
        name = "one"

        def detect(self, trajectory: AgentTrajectory) -> Finding:
            first = trajectory.events[0]
            return Finding(
                detector=self.name, mode_id="action.repeated_action", message="x", event_id=first.id
            )

    class Plugin:
        @hookimpl
        def agentdebug_detectors(self) -> list[object]:
            return [Dicts(), Mixed(), One()]

    monkeypatch.setattr(plugins, "_IN_CODE", [])
    register_plugin(Plugin(), name="wrong-items")
    report = diagnose(_booking())
    assert report.root_cause is not None
    assert (
        "detector 'dicts' failed (it returned dict items, not Findings); its findings are missing"
    ) in report.notes
    assert (
        "detector 'mixed' returned 2 str item(s) that are not Findings; those are missing, "
        "its 1 finding(s) are kept"
    ) in report.notes
    assert (
        "detector 'one' failed (it returned a Finding, not a list of Findings); "
        "its findings are missing"
    ) in report.notes
    assert any(f.message == "mixed's good finding" for f in report.findings)
    assert any(f.detector == "rules" for f in report.findings)
    errors = {a.strategy: a.outcome for a in report.audit if a.stage == "detect"}
    assert errors["dicts"] == "error" and errors["one"] == "error" and errors["mixed"] == "ok"


def test_an_attributor_returning_dicts_falls_back_to_the_heuristic_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl, register_plugin

    class Dicts:
        name = "dict-attributor"

        def attribute(self, trajectory: AgentTrajectory, findings: object) -> list[object]:
            return [{"agent_name": "ghost", "step_index": 1}]

    class Plugin:
        @hookimpl
        def agentdebug_attributors(self) -> list[Dicts]:
            return [Dicts()]

    monkeypatch.setattr(plugins, "_IN_CODE", [])
    register_plugin(Plugin(), name="dict-attributor")
    report = diagnose(_booking(), attributor="dict-attributor")
    assert report.root_cause is not None and report.root_cause.strategy == "heuristic"
    assert any(
        n.startswith(
            "attributor 'dict-attributor' failed: TypeError: it returned dict items, "
            "not Hypothesis objects;"
        )
        for n in report.notes
    )


# -- 4. a finding of a mode no plugin registers does not become the root cause ----------


def test_an_unregistered_mode_is_kept_marked_but_does_not_name_the_root_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl, register_plugin
    from agentdebug.schema import Finding

    class MadeUp:
        name = "made-up"

        def detect(self, trajectory: AgentTrajectory) -> list[Finding]:
            # (a later search call, which a confident finding would make the root cause)
            first = next(e for e in trajectory.events if e.id == "e5")
            return [
                Finding(
                    detector=self.name,
                    mode_id="made.up_mode",
                    message="unregistered mode",
                    event_id=first.id,
                    step_index=first.step_index,
                    agent_name=first.agent_name,
                    confidence=0.99,
                )
            ]

    class Plugin:
        @hookimpl
        def agentdebug_detectors(self) -> list[MadeUp]:
            return [MadeUp()]

    without = diagnose(_booking())
    monkeypatch.setattr(plugins, "_IN_CODE", [])
    register_plugin(Plugin(), name="made-up")
    report = diagnose(_booking())
    assert report.root_cause is not None and without.root_cause is not None
    assert report.root_cause.mode_id == without.root_cause.mode_id == ("action.malformed_tool_call")
    assert all(h.mode_id != "made.up_mode" for h in report.hypotheses)
    assert report.fix is not None
    # the registered findings rank as they did without the plugin
    assert [(h.agent_name, h.step_index) for h in report.hypotheses] == [
        (h.agent_name, h.step_index) for h in without.hypotheses
    ]
    (kept,) = [f for f in report.findings if f.mode_id == "made.up_mode"]
    assert kept.metadata["unknown_mode"] is True
    assert (
        "detector 'made-up' reported failure mode 'made.up_mode', which no installed plugin "
        "registers: its finding(s) are kept, marked unknown_mode, but not used to name the "
        "root cause"
    ) in report.notes


def test_the_registry_of_a_broken_plugin_is_built_in_process(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTS", "import")
    reg = get_registry()
    assert [str(p) for p in reg.problems] == [
        "plugin 'faulty' (agentdebug-faulty 0.3.0): cannot be loaded "
        "(RuntimeError: missing API key); skipped"
    ]
    assert "tidy-secret" in reg.detectors
    assert ("faulty", "agentdebug-faulty 0.3.0") in reg.plugins()


def test_a_plugin_registered_in_code_that_pluggy_refuses_is_skipped_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl, register_plugin

    class Misspelt:
        @hookimpl
        def agentdebug_detectors(self, trajectory: AgentTrajectory) -> list[object]:
            return []  # (the hookspec takes no argument)

    monkeypatch.setattr(plugins, "_IN_CODE", [])
    register_plugin(Misspelt())
    (problem,) = get_registry().problems
    assert str(problem).startswith(
        "plugin 'Misspelt' (registered in code): cannot be registered (PluginValidationError: "
    )
    assert "trajectory" in problem.reason and problem.reason.endswith("; skipped")
    report = diagnose(_booking())
    assert report.root_cause is not None
    assert str(problem) in report.notes
