"""The prompt texts, kept as package data in this folder (``<name>.txt``).

Templates use :class:`string.Template` syntax: ``$name`` or ``${name}`` is a
placeholder and ``$$`` a literal dollar sign, so the JSON braces prompts are full
of need no escaping.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from agentdebug.llm.errors import PromptError

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@cache
def load_prompt(name: str) -> str:
    """The text of prompt ``name`` (the file ``llm/prompts/<name>.txt``)."""
    if not _NAME.match(name) or ".." in name:
        raise PromptError(f"bad prompt name {name!r}")
    path = resources.files(__name__).joinpath(f"{name}.txt")
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise PromptError(
            f"prompt {name!r} not found (no {name}.txt in agentdebug/llm/prompts)"
        ) from None


def render_prompt(name: str, /, **values: Any) -> str:
    """Prompt ``name`` with its ``$placeholders`` filled from ``values``.

    A placeholder without a value, or a stray ``$`` that is not a placeholder, is
    a PromptError naming the prompt. Values the template does not use are allowed,
    so callers can pass one set of values to several prompts.
    """
    template = Template(load_prompt(name))
    if not template.is_valid():
        raise PromptError(
            f"prompt {name!r} has a '$' that is not a placeholder (write '$$' for a dollar sign)"
        )
    missing = [p for p in dict.fromkeys(template.get_identifiers()) if p not in values]
    if missing:
        listed = ", ".join(f"${p}" for p in missing)
        raise PromptError(f"prompt {name!r} needs a value for {listed}")
    return template.substitute({k: str(v) for k, v in values.items()})
