"""Plugins: the built-ins register through the hooks, and a third-party package
installed from examples/ shows up in a real report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pluggy
import pytest
from agentdebug.plugins import HookSpecs, Registry, make_plugin_manager
from agentdebug.schema import AgentTrajectory, DiagnosticReport
from conftest import EXAMPLES, run_cli


def test_builtins_come_through_the_same_hooks_as_plugins() -> None:
    reg = Registry.from_plugin_manager(make_plugin_manager(load_entry_points=False))
    assert "rules" in reg.detectors
    assert "heuristic" in reg.attributors
    assert {"whowhen", "trail", "otlp", "messages", "events"} <= set(reg.importers)
    assert len(reg.failure_modes) >= 19


def test_a_duplicate_name_keeps_the_first_and_warns() -> None:
    from agentdebug.detect import RulePack
    from agentdebug.plugins import hookimpl

    class Clash:
        @hookimpl
        def agentdebug_detectors(self) -> list[RulePack]:
            return [RulePack()]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Clash(), name="clash")
    reg = Registry.from_plugin_manager(pm)
    assert reg.warnings == [
        "plugin 'clash': detector 'rules' is already registered by the built-ins "
        "(agentdebug-core); keeping that one"
    ]
    assert reg.added_by["detectors"]["rules"] == "builtin"


def test_on_report_hook_sees_every_report_and_cannot_break_it(tmp_path: Path) -> None:
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl

    seen: list[str] = []

    class Listener:
        @hookimpl
        def agentdebug_on_report(
            self, report: DiagnosticReport, trajectory: AgentTrajectory
        ) -> None:
            seen.append(report.trajectory_id)
            raise RuntimeError("a buggy plugin")

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Listener())
    reg = Registry.from_plugin_manager(pm)
    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory, registry=reg)
    assert seen == ["example-failed-booking"]
    assert report.root_cause is not None


def test_hookspecs_all_carry_the_project_prefix_and_a_docstring() -> None:
    names = [n for n in dir(HookSpecs) if not n.startswith("_")]
    assert names and all(n.startswith("agentdebug_") for n in names)
    assert all(getattr(HookSpecs, n).__doc__ for n in names)
    assert isinstance(make_plugin_manager(load_entry_points=False), pluggy.PluginManager)


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin, pip-installed into a folder put on PYTHONPATH."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(EXAMPLES / "agentdebug-example-detector"),
        ],
        check=True,
        capture_output=True,
    )
    return target


def test_a_third_party_detector_finding_appears_in_the_report(
    installed_example: Path, tmp_path: Path
) -> None:
    run_file = tmp_path / "leak.json"
    run_file.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Who handles refunds?"},
                {
                    "role": "assistant",
                    "content": "Write to jane.doe@example.com, she handles refunds.",
                },
            ]
        )
    )
    env = {"PYTHONPATH": str(installed_example)}
    listed = run_cli("plugins", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "example-detector (agentdebug-example-detector 0.1.0)" in listed.stdout
    assert "example-email-leak" in listed.stdout
    assert "recoverers:  native, reflexion, critic, automanual" in listed.stdout

    result = run_cli("diagnose", str(run_file), "--format", "json", "--no-store", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    leak = [f for f in report["findings"] if f["detector"] == "example-email-leak"]
    assert len(leak) == 1
    assert leak[0]["mode_id"] == "action.pii_exposed"
    assert leak[0]["evidence"][0]["quote"] == "jane.doe@example.com"
    assert "example-email-leak" in report["detectors"]

    without = run_cli("diagnose", str(run_file), "--format", "json", "--no-store")
    assert "example-email-leak" not in without.stdout


def test_a_plugin_attributors_answer_outside_the_run_is_dropped_with_a_note() -> None:
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import hookimpl
    from agentdebug.schema import Hypothesis

    class Ghostly:
        name = "ghostly"

        def attribute(self, trajectory: AgentTrajectory, findings: object) -> list[Hypothesis]:
            first = trajectory.events[1]
            return [
                Hypothesis(agent_name="ghost", step_index=999, strategy=self.name, confidence=0.9),
                Hypothesis(
                    agent_name=first.agent_name,
                    step_index=first.step_index,
                    strategy=self.name,
                    confidence=0.4,
                ),
            ]

    class Plugin:
        @hookimpl
        def agentdebug_attributors(self) -> list[Ghostly]:
            return [Ghostly()]

    pm = make_plugin_manager(load_entry_points=False)
    pm.register(Plugin())
    reg = Registry.from_plugin_manager(pm)
    trajectory = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    report = diagnose(trajectory, attributor="ghostly", registry=reg)
    assert report.root_cause is not None and report.root_cause.agent_name != "ghost"
    assert report.root_cause.step_index == trajectory.events[1].step_index
    assert any(
        "attributor 'ghostly' named ghost at step 999, a step this run does not have" in n
        for n in report.notes
    )


def test_a_plugin_recoverer_that_crashes_is_named_not_called_a_bug_in_agentdebug(
    tmp_path: Path,
) -> None:
    plugin = tmp_path / "crashing_recoverer.py"
    plugin.write_text(
        "from agentdebug.plugins import hookimpl\n"
        "class Crash:\n"
        "    name = 'crashy'\n"
        "    requires_model = False\n"
        "    def recover(self, trajectory, report):\n"
        "        raise RuntimeError('recoverer bug')\n"
        "class Plugin:\n"
        "    @hookimpl\n"
        "    def agentdebug_recoverers(self):\n"
        "        return [Crash()]\n"
    )
    runner = tmp_path / "act_with_plugin.py"
    runner.write_text(
        "import agentdebug.plugins as plugins\n"
        "import crashing_recoverer\n"
        "pm = plugins.make_plugin_manager()\n"
        "pm.register(crashing_recoverer.Plugin())\n"
        "plugins._default = plugins.Registry.from_plugin_manager(pm)\n"
        "from agentdebug.cli import main\n"
        "main()\n"
    )
    assert run_cli("ingest", str(EXAMPLES / "failed_booking.json")).returncode == 0
    env = {"PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, str(runner), "act", "example-failed-booking", "--recover", "crashy"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "recoverer 'crashy' failed: RuntimeError: recoverer bug" in proc.stderr
    assert "bug in agentdebug" not in proc.stderr


def test_a_plugin_registered_in_code_is_used_and_survives_a_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentdebug import plugins
    from agentdebug.diagnose import diagnose
    from agentdebug.plugins import get_registry, hookimpl, register_plugin, reset_registry
    from agentdebug.schema import Finding

    class Shouting:
        name = "shouting"

        def detect(self, trajectory: AgentTrajectory) -> list[Finding]:
            last = trajectory.events[-1]
            return [
                Finding(
                    detector=self.name,
                    mode_id="verification.invalid_final_output",
                    message="the answer shouts",
                    event_id=last.id,
                    step_index=last.step_index,
                    agent_name=last.agent_name,
                )
            ]

    class Plugin:
        @hookimpl
        def agentdebug_detectors(self) -> list[Shouting]:
            return [Shouting()]

    monkeypatch.setattr(plugins, "_IN_CODE", [])
    try:
        plugin = Plugin()
        register_plugin(plugin, name="shouting")
        register_plugin(plugin, name="shouting")  # (again: a no-op)
        assert "shouting" in get_registry().detectors
        reset_registry()
        assert "shouting" in get_registry().detectors  # rebuilt with it
        trajectory = AgentTrajectory.model_validate_json(
            (EXAMPLES / "failed_booking.json").read_text()
        )
        report = diagnose(trajectory)
        assert any(f.message == "the answer shouts" for f in report.findings)
    finally:
        monkeypatch.setattr(plugins, "_IN_CODE", [])
        reset_registry()
    assert "shouting" not in get_registry().detectors
