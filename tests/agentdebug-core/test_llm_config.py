"""Model settings: precedence, the config file, errors that name the place; budgets."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentdebug.errors import ConfigError
from agentdebug.llm import (
    Budget,
    BudgetExceeded,
    LLMSettings,
    NoModelConfigured,
    budget_scope,
    config_path,
    current_settings,
    load_settings,
    read_config,
    remaining,
    unset_config_value,
    use_settings,
    write_config_value,
)
from agentdebug.llm.budget import reserve
from agentdebug.llm.config import FIELDS, env_name


@pytest.fixture(autouse=True)
def llm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No real user config or environment leaks in: a private config file path and
    none of the variables the settings read."""
    for key in FIELDS:
        monkeypatch.delenv(env_name(key), raising=False)
    for var in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "cfg" / "config.toml"
    monkeypatch.setenv("AGENTDEBUG_CONFIG", str(path))
    yield path


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------ precedence


def test_defaults_when_nothing_is_set() -> None:
    s = load_settings()
    assert s == LLMSettings()
    assert not s.configured
    assert (s.timeout, s.max_retries, s.concurrency, s.temperature) == (60.0, 4, 4, 0.0)
    assert s.response_format == "auto" and s.cache and not s.no_fallback


def test_precedence_flags_over_env_over_openai_over_file(
    llm_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_file(
        llm_env,
        '[llm]\nmodel = "from-file"\nbase_url = "http://file/v1"\napi_key = "file-key"\ntimeout = 7\n',
    )
    assert load_settings().model == "from-file"
    assert load_settings().timeout == 7.0

    monkeypatch.setenv("OPENAI_MODEL", "from-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai/v1")
    s = load_settings()
    assert (s.model, s.base_url, s.api_key) == ("from-openai", "http://openai/v1", "file-key")

    monkeypatch.setenv("AGENTDEBUG_MODEL", "from-env")
    monkeypatch.setenv("AGENTDEBUG_API_KEY", "env-key")
    s = load_settings()
    assert (s.model, s.base_url, s.api_key) == ("from-env", "http://openai/v1", "env-key")

    s = load_settings({"model": "from-flag", "base_url": None, "timeout": 3})
    assert (s.model, s.base_url, s.timeout) == ("from-flag", "http://openai/v1", 3.0)
    assert s.configured


def test_every_field_reads_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "AGENTDEBUG_TIMEOUT": "2.5",
        "AGENTDEBUG_MAX_RETRIES": "1",
        "AGENTDEBUG_CONCURRENCY": "8",
        "AGENTDEBUG_TEMPERATURE": "0.3",
        "AGENTDEBUG_MAX_OUTPUT_TOKENS": "100",
        "AGENTDEBUG_RESPONSE_FORMAT": "json_object",
        "AGENTDEBUG_CACHE": "false",
        "AGENTDEBUG_CACHE_PATH": "/tmp/x.db",
        "AGENTDEBUG_NO_FALLBACK": "yes",
        "AGENTDEBUG_BASE_URL": "http://local/v1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s = load_settings()
    assert s.timeout == 2.5 and s.max_retries == 1 and s.concurrency == 8
    assert s.temperature == 0.3 and s.max_output_tokens == 100
    assert s.response_format == "json_object" and s.cache is False
    assert s.cache_path == "/tmp/x.db" and s.no_fallback is True
    assert s.base_url == "http://local/v1"


def test_empty_environment_values_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDEBUG_MODEL", "")
    monkeypatch.setenv("AGENTDEBUG_TIMEOUT", "")
    assert load_settings() == LLMSettings()


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("AGENTDEBUG_TIMEOUT", "abc"),
        ("AGENTDEBUG_TIMEOUT", "-1"),
        ("AGENTDEBUG_CONCURRENCY", "0"),
        ("AGENTDEBUG_RESPONSE_FORMAT", "xml"),
        ("AGENTDEBUG_CACHE", "maybe"),
    ],
)
def test_bad_environment_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()


def test_bad_value_in_file_names_file_and_key(llm_env: Path) -> None:
    write_file(llm_env, '[llm]\ntimeout = "soon"\n')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(llm_env) in str(err.value) and "timeout" in str(err.value)


def test_unknown_key_and_broken_toml_in_file(llm_env: Path) -> None:
    write_file(llm_env, '[llm]\nmodle = "x"\n')
    with pytest.raises(ConfigError, match="unknown setting 'modle'"):
        load_settings()
    write_file(llm_env, "[llm\nmodel = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML") as err:
        load_settings()
    assert str(llm_env) in str(err.value)
    write_file(llm_env, 'llm = "x"\n')
    with pytest.raises(ConfigError, match="must be a table"):
        load_settings()
    # settings written above any table: TOML gives them to none (before, ignored)
    write_file(llm_env, 'model = "gpt-4o-mini"\nbase_url = "http://localhost:1/v1"\n')
    with pytest.raises(ConfigError, match=r"base_url, model must be under \[llm\]") as err:
        load_settings()
    assert str(llm_env) in str(err.value)


def test_bad_override_names_the_flag() -> None:
    with pytest.raises(ConfigError, match="--max-retries"):
        load_settings({"max_retries": "many"})
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings({"modle": "x"})


def test_config_path_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert config_path() == tmp_path / "cfg" / "config.toml"
    monkeypatch.delenv("AGENTDEBUG_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "agentdebug" / "config.toml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert config_path() == tmp_path / "h" / ".config" / "agentdebug" / "config.toml"


# ------------------------------------------------------------------ the file


def test_write_read_unset_round_trip(llm_env: Path) -> None:
    assert read_config() == {}
    write_config_value("model", "qwen2.5:7b")
    write_config_value("timeout", "30")
    write_config_value("cache", "false")
    write_config_value("base_url", 'http://h/v1?a="b"\\c')
    assert read_config() == {
        "model": "qwen2.5:7b",
        "timeout": 30.0,
        "cache": False,
        "base_url": 'http://h/v1?a="b"\\c',
    }
    s = load_settings()
    assert s.model == "qwen2.5:7b" and s.timeout == 30.0 and s.cache is False

    write_config_value("model", "llama3")
    assert read_config()["model"] == "llama3"
    assert llm_env.read_text().count("model =") == 1

    unset_config_value("model")
    assert "model" not in read_config()
    unset_config_value("model")  # absent: nothing happens
    assert load_settings().model is None


def test_write_keeps_comments_and_other_tables(llm_env: Path) -> None:
    original = (
        "# my settings\n"
        'title = "mine"\n\n'
        "[llm]\n"
        "# which model\n"
        'model = "a"\n\n'
        "[other]\n"
        "keep = [1, 2]\n"
    )
    write_file(llm_env, original)
    write_config_value("model", "b")
    write_config_value("concurrency", 2)
    text = llm_env.read_text()
    assert "# my settings" in text and "# which model" in text and "keep = [1, 2]" in text
    assert text.index("concurrency = 2") < text.index("[other]")
    unset_config_value("model")
    assert read_config() == {"concurrency": 2}
    assert "[other]\nkeep = [1, 2]" in llm_env.read_text()


def test_write_refuses_bad_values_and_keys(llm_env: Path) -> None:
    write_config_value("model", "a")
    before = llm_env.read_text()
    with pytest.raises(ConfigError, match="timeout"):
        write_config_value("timeout", "abc")
    with pytest.raises(ConfigError, match="response_format"):
        write_config_value("response_format", "yaml")
    with pytest.raises(ConfigError, match="unknown setting 'color'"):
        write_config_value("color", "red")
    with pytest.raises(ConfigError, match="unknown setting"):
        unset_config_value("color")
    assert llm_env.read_text() == before


def test_written_file_is_private(llm_env: Path) -> None:
    write_config_value("api_key", "sk-secret-123456")
    assert stat.S_IMODE(os.stat(llm_env).st_mode) == 0o600


def test_unusual_layout_is_not_mangled(llm_env: Path) -> None:
    write_file(llm_env, 'llm.model = "a"\n')
    with pytest.raises(ConfigError, match="edit it by hand"):
        write_config_value("model", "b")
    assert llm_env.read_text() == 'llm.model = "a"\n'


def test_describe_masks_the_key() -> None:
    d = LLMSettings(model="m", api_key="sk-proj-abcdefghijklmnop1234").describe()
    assert d["api_key"] == "sk-...1234"
    assert d["model"] == "m" and set(d) == set(FIELDS)
    assert LLMSettings(api_key="short").describe()["api_key"] == "***"
    assert LLMSettings().describe()["api_key"] is None


def test_use_settings_nests_and_current_settings_falls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MODEL", "env-model")
    assert current_settings().model == "env-model"
    with use_settings(LLMSettings(model="outer")):
        assert current_settings().model == "outer"
        with use_settings(LLMSettings(model="inner")):
            assert current_settings().model == "inner"
        assert current_settings().model == "outer"
    assert current_settings().model == "env-model"


def test_no_model_message_says_how_to_configure() -> None:
    text = str(NoModelConfigured())
    assert "--model" in text and "AGENTDEBUG_MODEL" in text and "config set model" in text


# -------------------------------------------------------------------- budget


@pytest.mark.parametrize(
    ("text", "calls", "tokens"),
    [
        ("20000", None, 20000),
        ("8calls", 8, None),
        ("50000tokens", None, 50000),
        ("8calls,50000tokens", 8, 50000),
        ("calls=8,tokens=50000", 8, 50000),
        ("1 call, 50k tokens", 1, 50000),
        ("tokens=1_000", None, 1000),
    ],
)
def test_budget_parse(text: str, calls: int | None, tokens: int | None) -> None:
    assert Budget.parse(text) == Budget(max_calls=calls, max_tokens=tokens)


@pytest.mark.parametrize(
    "text", ["", "lots", "8calls,9calls", "8 apples", "calls=", "-5", "8calls,"]
)
def test_budget_parse_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="budget"):
        Budget.parse(text)


def test_budget_scopes_nest_and_charge_outer_ones() -> None:
    assert remaining().calls is None and remaining().tokens is None
    with budget_scope(Budget(max_calls=3, max_tokens=1000)) as outer:
        assert outer is not None
        reserve(10).settle(100)
        with budget_scope(Budget(max_calls=1)) as inner:
            assert inner is not None
            assert remaining().calls == 1
            reserve(10).settle(50)
            with pytest.raises(BudgetExceeded) as err:
                reserve(10)
            assert err.value.kind == "calls" and err.value.limit == 1
        assert (outer.calls, outer.tokens) == (2, 150)
        assert remaining().calls == 1 and remaining().tokens == 850
        with pytest.raises(BudgetExceeded, match="tokens") as terr:
            reserve(900)
        assert terr.value.spent == 150 and terr.value.needed == 900
        reserve(0).settle(0)
        with pytest.raises(BudgetExceeded):
            reserve(0)
    with budget_scope(None) as nothing:
        assert nothing is None
        reserve(10**9).settle(0)
