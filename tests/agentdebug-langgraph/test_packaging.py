"""What `pip install ./packages/agentdebug-core ./packages/agentdebug-langgraph` gives a
user: the packages as built wheels, not the editable source the other tests import.

An editable install reads the source tree, so a file a wheel leaves out (the
prompts, ``py.typed``, an entry point) goes unnoticed there. Here the wheels are
built, installed into a folder of their own and put first on the path of a fresh
interpreter, outside the repository: the main job (``agentdebug diagnose``) and the
LangGraph example (capture, diagnosis, fork, verified branch) run from them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "packages"


def _pip(*args: str, cwd: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    """The core and LangGraph wheels, built (no network: hatchling is a test
    dependency) and installed into a folder of their own; with the wheels."""
    root = tmp_path_factory.mktemp("packaging")
    wheels, site = root / "wheels", root / "site"
    _pip(
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(wheels),
        str(PACKAGES / "agentdebug-core"),
        str(PACKAGES / "agentdebug-langgraph"),
        cwd=root,
    )
    built = {p.name.split("-")[0]: p for p in wheels.glob("*.whl")}
    assert set(built) == {"agentdebug_core", "agentdebug_langgraph"}, built
    _pip("install", "-q", "--no-deps", "--target", str(site), *map(str, built.values()), cwd=root)
    return site, built


def _python(site: Path, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter whose path starts with the installed wheels (the test
    environment's editable install comes after them: only its dependencies are used)."""
    env = {**os.environ, "PYTHONPATH": str(site), "AGENTDEBUG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


def test_the_wheels_hold_what_the_packages_need(
    installed: tuple[Path, dict[str, Path]],
) -> None:
    _, built = installed
    core = zipfile.ZipFile(built["agentdebug_core"]).namelist()
    graph = zipfile.ZipFile(built["agentdebug_langgraph"]).namelist()
    prompts = REPO / "packages/agentdebug-core/src/agentdebug/llm/prompts"
    shipped = {p.name for p in prompts.glob("*.txt")} - {"_test.txt"}
    assert shipped and {f"agentdebug/llm/prompts/{n}" for n in shipped} <= set(core)
    assert "agentdebug/llm/prompts/_test.txt" not in core
    # typed packages: a user's mypy reads their annotations, not "missing py.typed"
    assert "agentdebug/py.typed" in core
    assert "agentdebug_langgraph/py.typed" in graph
    meta = zipfile.ZipFile(built["agentdebug_langgraph"])
    info = next(n for n in graph if n.endswith(".dist-info/entry_points.txt"))
    assert "langgraph = agentdebug_langgraph._plugin" in meta.read(info).decode()
    description = meta.read(next(n for n in graph if n.endswith("/METADATA"))).decode()
    assert "# agentdebug-langgraph" in description  # the package's README on its index page


def test_main_job_runs_from_the_installed_wheel(
    installed: tuple[Path, dict[str, Path]], tmp_path: Path
) -> None:
    site, _ = installed
    shutil.copy(REPO / "examples" / "failed_booking.json", tmp_path)
    proc = _python(
        site,
        "-c",
        "import agentdebug, agentdebug_langgraph, sys; print(agentdebug.__file__);"
        " print(agentdebug_langgraph.__file__);"
        " from agentdebug.cli import main; sys.argv = ['agentdebug', *sys.argv[1:]]; main()",
        "diagnose",
        "failed_booking.json",
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second, *report = proc.stdout.splitlines()
    assert Path(first).is_relative_to(site) and Path(second).is_relative_to(site)
    text = "\n".join(report)
    assert "root cause" in text and "search_fares" in text and "searcher" in text, text


@pytest.mark.slow
def test_langgraph_example_runs_from_the_installed_wheels(
    installed: tuple[Path, dict[str, Path]], tmp_path: Path
) -> None:
    site, _ = installed
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "langgraph", project / "examples" / "langgraph")
    script = project / "examples" / "langgraph" / "run.py"
    proc = _python(
        site,
        "-c",
        "import runpy, sys, agentdebug_langgraph; print(agentdebug_langgraph.__file__);"
        " sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
        str(script),
        "--home",
        str(tmp_path / "store"),
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert Path(proc.stdout.splitlines()[0]).is_relative_to(site)
    assert "Root cause: agent at step 1" in proc.stdout
    assert "the diagnosis is verified by rerun." in proc.stdout
