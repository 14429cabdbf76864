"""`agentdebug config set/unset` with values a user gets wrong: a bad value already
in the file, a negative number, an empty value."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli


def _env(tmp_path: Path) -> dict[str, str]:
    return {"AGENTDEBUG_CONFIG": str(tmp_path / "config.toml")}


def test_unset_mends_a_bad_value_in_the_file(tmp_path: Path) -> None:
    """Every command says the file's timeout is bad; `config unset timeout` is the
    way to mend it (before, it failed with that same error and left the file)."""
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nmodel = "m"\ntimeout = "soon"\n')
    assert "bad value 'soon' for timeout" in run_cli("config", "show", env=_env(tmp_path)).stderr
    removed = run_cli("config", "unset", "timeout", env=_env(tmp_path))
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("timeout removed from ")
    assert config.read_text() == '[llm]\nmodel = "m"\n'
    shown = run_cli("config", "show", env=_env(tmp_path))
    assert shown.returncode == 0 and "model              m" in shown.stdout
    again = run_cli("config", "unset", "timeout", env=_env(tmp_path))
    assert again.returncode == 0 and again.stdout.startswith("timeout was not set in ")


def test_set_checks_a_negative_value_and_refuses_an_empty_one(tmp_path: Path) -> None:
    negative = run_cli("config", "set", "timeout", "-5", env=_env(tmp_path))
    assert negative.returncode == 1  # (before: "No such option '-5'", a usage error)
    assert "bad value '-5' for timeout: Input should be greater than 0" in negative.stderr
    # said as the command's value, not the file's (before: "<file> [llm] timeout: bad
    # value", as if the file held it)
    assert negative.stderr.startswith("error: config set timeout: bad value '-5'")
    assert "; nothing was written to " in negative.stderr
    empty = run_cli("config", "set", "model", "", env=_env(tmp_path))
    assert empty.returncode == 2  # (before: model = "" written, hiding AGENTDEBUG_MODEL's)
    assert "to remove model from the config file: agentdebug config unset model" in empty.stderr
    assert not (tmp_path / "config.toml").exists()
