"""Which model to ask, and how: settings from flags, environment and a config file.

Precedence, per setting: explicit overrides (CLI flags) > ``AGENTDEBUG_<NAME>`` >
``OPENAI_MODEL`` / ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (for those three only) >
the ``[llm]`` table of the config file > defaults.

The config file is TOML at ``$AGENTDEBUG_CONFIG``, else
``$XDG_CONFIG_HOME/agentdebug/config.toml``, else ``~/.config/agentdebug/config.toml``.
``agentdebug config set`` edits only the line of the key it sets inside ``[llm]``;
comments and other tables are kept as they are.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentdebug.errors import ConfigError

ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]

CONFIG_ENV = "AGENTDEBUG_CONFIG"
ENV_PREFIX = "AGENTDEBUG_"
#: Settings that also fall back to the variables the openai library itself reads.
OPENAI_FALLBACKS = {
    "model": "OPENAI_MODEL",
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
}


class LLMSettings(BaseModel):
    """Everything the model client needs; frozen and hashable, so equal settings
    share one client (its semaphore, cache connection and learned answer form)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    concurrency: int = Field(default=4, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    max_output_tokens: int = Field(default=2048, ge=1)
    response_format: ResponseFormat = "auto"
    cache: bool = True
    cache_path: str | None = None
    no_fallback: bool = False
    #: Seconds the automatic diagnosis of a failed run (a framework plugin's, in
    #: the user's process) may spend on model calls in all, retries included,
    #: before it answers with the free tier; 0: no limit. (``agentdebug diagnose``
    #: has none: ``timeout`` and ``max_retries`` bound each call.)
    auto_deadline: float = Field(default=60.0, ge=0)

    @field_validator("base_url")
    @classmethod
    def _has_scheme(cls, value: str | None) -> str | None:
        # Without a scheme the URL reads as unreachable and would be retried for
        # minutes; it is a typo in the settings, said at once.
        if value and not re.match(r"^https?://", value, re.I):
            raise ValueError(f"the base URL needs a scheme: http://{value} (or https://...)")
        return value

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def describe(self) -> dict[str, Any]:
        """The settings as a dict safe to print: the API key is masked."""
        out = self.model_dump()
        out["api_key"] = mask_secret(self.api_key)
        return out


FIELDS: tuple[str, ...] = tuple(LLMSettings.model_fields)


def mask_secret(value: str | None) -> str | None:
    """``sk-...abcd`` for a key long enough to hide most of it, else ``***``."""
    if not value:
        return None
    if len(value) < 12:
        return "***"
    return f"{value[:3]}...{value[-4:]}"


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper()


def _check_key(key: str, where: str) -> None:
    if key not in LLMSettings.model_fields:
        raise ConfigError(f"{where}: unknown setting '{key}' (known: {', '.join(FIELDS)})")


def coerce(key: str, value: Any, where: str) -> Any:
    """``value`` as the type of setting ``key``; ConfigError naming ``where`` if it is not."""
    _check_key(key, where)
    try:
        parsed = LLMSettings.model_validate({key: value})
    except ValidationError as exc:
        problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(f"{where}: bad value {value!r} for {key}: {problem}") from None
    return getattr(parsed, key)


# --------------------------------------------------------------------------- file


def config_path() -> Path:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "agentdebug" / "config.toml"


def _read_document(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def read_config() -> dict[str, Any]:
    """The ``[llm]`` table of the config file, each value checked and typed.

    A missing file is an empty table; an unknown key or a bad value is a ConfigError
    naming the file and the key (a typo that silently did nothing would be worse).
    """
    path = config_path()
    document = _read_document(path)
    table = document.get("llm", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'llm' must be a table ([llm])")
    astray = sorted(k for k in document if k in LLMSettings.model_fields)
    if astray:  # (above the table: TOML reads them as no table's, so they did nothing)
        raise ConfigError(f"{path}: {', '.join(astray)} must be under [llm], not above it")
    return {key: coerce(key, value, f"{path} [llm] {key}") for key, value in table.items()}


_HEADER = re.compile(r"^\s*\[")
_LLM_HEADER = re.compile(r"^\s*\[\s*llm\s*\]\s*(#.*)?$")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return _toml_string(str(value))


def _toml_string(text: str) -> str:
    escapes = {
        '"': '\\"',
        "\\": "\\\\",
        "\b": "\\b",
        "\t": "\\t",
        "\n": "\\n",
        "\f": "\\f",
        "\r": "\\r",
    }
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _edit_llm_line(text: str, key: str, line: str | None) -> str:
    """``text`` with ``key``'s line in [llm] replaced by ``line`` (None removes it)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if _LLM_HEADER.match(ln)), None)
    if start is None:
        if line is None:
            return text
        sep = "" if not text or text.endswith("\n") else "\n"
        gap = "\n" if text.strip() else ""
        return f"{text}{sep}{gap}[llm]\n{line}\n"
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    own = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    hits = [i for i in range(start + 1, end) if own.match(lines[i])]
    for i in reversed(hits[1:]):
        del lines[i]
    if hits:
        if line is None:
            del lines[hits[0]]
        else:
            lines[hits[0]] = line + "\n"
    elif line is not None:
        last = max((i for i in range(start, end) if lines[i].strip()), default=start)
        if not lines[last].endswith("\n"):
            lines[last] += "\n"
        lines.insert(last + 1, line + "\n")
    return "".join(lines)


def _write_llm_value(key: str, value: Any | None) -> None:
    path = config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
    before = _read_document(path)
    new_text = _edit_llm_line(text, key, None if value is None else f"{key} = {_toml_value(value)}")
    # The edit is line-based; check that it changed exactly what was meant, so an
    # unusual layout (a dotted `llm.model = ...`, an inline table) is never mangled.
    after: dict[str, Any] | None
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    expected = dict(before)
    table = dict(expected.get("llm", {}))
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value
    expected["llm"] = table
    if after is None or _without_empty_llm(after) != _without_empty_llm(expected):
        raise ConfigError(
            f"{path}: cannot edit [llm] {key} safely in this file's layout; edit it by hand"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new_text, encoding="utf-8")
    # The file may hold an API key.
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _without_empty_llm(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "llm" or v}


def write_config_value(key: str, value: Any) -> None:
    """Set ``key`` in the file's ``[llm]`` table; ``value`` (often a CLI string) is
    parsed as the setting's type first, so a bad value never reaches the file."""
    where = f"config set {key}"  # (not the file's name: the file does not hold it)
    try:
        typed = coerce(key, value, where)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; nothing was written to {config_path()}") from None
    if typed is None:
        unset_config_value(key)
        return
    _write_llm_value(key, typed)


def unset_config_value(key: str) -> None:
    """Remove ``key`` from the file's ``[llm]`` table (nothing happens if it is absent)."""
    _check_key(key, str(config_path()))
    if not config_path().exists():
        return
    _write_llm_value(key, None)


# ----------------------------------------------------------------------- settings


def load_settings(overrides: Mapping[str, Any] | None = None) -> LLMSettings:
    """Settings from overrides > AGENTDEBUG_* > OPENAI_* > config file > defaults.

    None values in ``overrides`` mean "not given"; empty environment variables are
    ignored too. A bad value raises ConfigError naming where it came from.
    """
    values: dict[str, Any] = dict(read_config())
    for key, var in OPENAI_FALLBACKS.items():
        raw = os.environ.get(var)
        if raw:
            values[key] = coerce(key, raw, var)
    for key in FIELDS:
        var = env_name(key)
        raw = os.environ.get(var)
        if raw:
            values[key] = coerce(key, raw, var)
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = coerce(key, value, f"--{key.replace('_', '-')}")
    return LLMSettings(**values)


_active: ContextVar[LLMSettings | None] = ContextVar("agentdebug_llm_settings", default=None)


@contextmanager
def use_settings(settings: LLMSettings) -> Iterator[LLMSettings]:
    """Make ``settings`` the ones :func:`current_settings` returns inside the block."""
    token = _active.set(settings)
    try:
        yield settings
    finally:
        _active.reset(token)


def current_settings() -> LLMSettings:
    """The innermost :func:`use_settings`, else :func:`load_settings` from scratch."""
    active = _active.get()
    return active if active is not None else load_settings()
