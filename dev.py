#!/usr/bin/env python3
"""Developer entry point: isolated environments per package, tests, lint, the CLI.

    python3 dev.py test                 every package's suite in its own venv, again on
                                        the lowest versions it supports, again on the
                                        newest Python found, then ruff and mypy
    python3 dev.py test agentdebug-core  one package (extra args go to pytest after --)
    python3 dev.py test agentdebug-langgraph@lowest
                                        one package on the lowest versions it supports
    python3 dev.py test agentdebug-core@python3.13
                                        one package on another Python
    python3 dev.py lint                 ruff and mypy only
    python3 dev.py agentdebug ARGS...   the agentdebug command, from the core venv
    python3 dev.py python ARGS...       python from the core venv
    python3 dev.py run PACKAGE ARGS...  python from PACKAGE's venv (examples of plugins)

Needs only a Python 3.11+ with venv; everything else is installed from the package
registry into .venvs/<package>/ on first use, and again when a pyproject changes.
Plugin packages cannot share one environment (crewai and openai-agents pin
incompatible openai versions), so each gets its own.

A package's ``lowest.txt`` pins the lowest versions of its dependencies that its
pyproject says it supports (with what they need at their lowest): its suite runs a
second time in ``.venvs/<package>@lowest``, built under those pins, so a range in a
pyproject is one the tests have passed at both ends. So for Python: where a newer
``python3.N`` than the one running this is on the PATH or installed by pyenv, the
newest runs every suite again (``.venvs/<package>@python3.N``; 3.13 prints what
3.11 cannot, and suspends an async generator at another instruction).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
VENVS = ROOT / ".venvs"
CORE = "agentdebug-core"
LOWEST = "@lowest"  # a package's suite on the lowest versions it supports (lowest.txt)
NEWEST_TRIED = 20  # python3.20 down: the newest Python found runs every suite again


def say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def packages() -> list[str]:
    names = sorted(p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists())
    names.remove(CORE)
    return [CORE, *names]


@cache
def interpreter(name: str) -> str | None:
    """A ``python3.N`` that runs: on the PATH, else one pyenv installed (pyenv's
    shims run only the versions it is set to)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    installed = sorted(root.glob(f"versions/{name.removeprefix('python')}.*/bin/{name}"))
    for found in [shutil.which(name), *map(str, reversed(installed))]:
        if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
            return found
    return None


@cache
def newest_python() -> str | None:
    """``python3.N``, the newest Python here newer than the one running this (which
    runs the suites first, and is the oldest the packages support)."""
    for minor in range(NEWEST_TRIED, sys.version_info.minor, -1):
        if interpreter(f"python3.{minor}"):
            return f"python3.{minor}"
    return None


def suites() -> list[str]:
    """Every package, then each that has a ``lowest.txt`` on those versions, then
    every package on the newest Python found."""
    names = packages()
    out = names + [f"{n}{LOWEST}" for n in names if (PACKAGES / n / "lowest.txt").exists()]
    newest = newest_python()
    return out + ([f"{n}@{newest}" for n in names] if newest else [])


def bin_path(env: Path, name: str) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / name


def _fingerprint(suite: str) -> str:
    package, lowest, python = _split(suite)
    h = hashlib.sha256(str(interpreter(python)).encode() if python else b"")
    for pkg in sorted({CORE, package}):  # (a set's order changes with the hash seed)
        h.update((PACKAGES / pkg / "pyproject.toml").read_bytes())
    if lowest:
        h.update((PACKAGES / package / "lowest.txt").read_bytes())
    constraints = ROOT / "constraints.txt"
    if constraints.exists():
        h.update(constraints.read_bytes())
    return h.hexdigest()


def _split(suite: str) -> tuple[str, bool, str | None]:
    """``agentdebug-langgraph@lowest`` -> the package, whether on its lowest pins, and
    the other Python it runs on (``agentdebug-core@python3.13``), if any."""
    package, _, variant = suite.partition("@")
    return package, suite.endswith(LOWEST), variant if variant.startswith("python") else None


def ensure_env(suite: str) -> Path:
    """The venv of a package (``suite``), or of a package on its lowest versions
    (``<package>@lowest``), built or refreshed if its pyproject or pins changed."""
    package, lowest, python = _split(suite)
    env = VENVS / suite
    stamp = env / ".agentdebug-stamp"
    want = _fingerprint(suite)
    if stamp.exists() and stamp.read_text() == want and bin_path(env, "python").exists():
        return env
    say(f"building {env.relative_to(ROOT)} (first use or changed dependencies)")
    if python:  # (another Python's venv: made by that Python)
        run([str(interpreter(python)), "-m", "venv", "--copies", "--clear", str(env)])
    else:
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
    py = str(bin_path(env, "python"))
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "pip"])
    args = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    constraints = ROOT / "constraints.txt"
    if constraints.exists():
        args += ["-c", str(constraints)]
    if lowest:
        args += ["-c", str(PACKAGES / package / "lowest.txt")]
    extra = "dev" if package == CORE else "test"
    if package != CORE:
        args += ["-e", str(PACKAGES / CORE)]
    args += ["-e", f"{PACKAGES / package}[{extra}]"]
    run(args)
    stamp.write_text(want)
    return env


def run(args: list[str], **kwargs: object) -> int:
    proc = subprocess.run(args, cwd=ROOT, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0 and kwargs.get("check", True) is not False:
        say(f"failed ({proc.returncode}): {' '.join(args[:6])} ...")
        sys.exit(proc.returncode)
    return int(proc.returncode)


def test(selected: list[str], pytest_args: list[str]) -> int:
    failed: list[str] = []
    for suite in selected or suites():
        package, _, python = _split(suite)
        if suite not in suites() and not (package in packages() and python and interpreter(python)):
            say(f"no suite '{suite}' (suites: {', '.join(suites())})")
            return 2
        env = ensure_env(suite)
        package, lowest, _ = _split(suite)
        say(f"pytest tests/{package}" + (" (lowest supported versions)" if lowest else ""))
        code = run(
            [str(bin_path(env, "python")), "-m", "pytest", f"tests/{package}", *pytest_args],
            check=False,
        )
        if code != 0:
            failed.append(suite)
    if not selected and newest_python() is None:
        say(
            f"no Python 3 newer than {sys.version_info.major}.{sys.version_info.minor} here "
            "(on the PATH or installed by pyenv): the suites ran on this one only"
        )
    if not selected and lint() != 0:
        failed.append("lint")
    if failed:
        say(f"FAILED: {', '.join(failed)}")
        return 1
    say("all green")
    return 0


def lint() -> int:
    env = ensure_env(CORE)
    say("ruff check")
    code = run([str(bin_path(env, "ruff")), "check", "."], check=False)
    say("ruff format --check")
    code |= run([str(bin_path(env, "ruff")), "format", "--check", "."], check=False)
    say("mypy")
    code |= run([str(bin_path(env, "mypy"))], check=False)
    for package in packages()[1:]:  # plugins: checked in their own venv, with their framework
        plugin_env = ensure_env(package)
        say(f"mypy packages/{package}/src")
        code |= run(
            [str(bin_path(plugin_env, "python")), "-m", "mypy", f"packages/{package}/src"],
            check=False,
        )
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "test":
        if "--" in rest:
            i = rest.index("--")
            return test(rest[:i], rest[i + 1 :])
        return test(rest, [])
    if cmd == "lint":
        return lint()
    if cmd == "env":
        print(ensure_env(rest[0] if rest else CORE))
        return 0
    if cmd == "run":
        if not rest or rest[0] not in packages():
            print(f"usage: dev.py run PACKAGE ARGS... (packages: {', '.join(packages())})")
            return 2
        exe = bin_path(ensure_env(rest[0]), "python")
        os.execv(str(exe), [str(exe), *rest[1:]])
    if cmd in {"agentdebug", "python"}:
        env = ensure_env(CORE)
        exe = bin_path(env, cmd)
        os.execv(str(exe), [str(exe), *rest])
    print(f"unknown command '{cmd}'\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
