"""Options shared by the commands that may call a model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def model_options(f: F) -> F:
    """--model/--base-url/--api-key and friends; they override env and config file."""
    options = [
        click.option(
            "--model",
            metavar="NAME",
            help="Model name (else AGENTDEBUG_MODEL, OPENAI_MODEL, config).",
        ),
        click.option(
            "--base-url",
            metavar="URL",
            help="OpenAI-compatible endpoint (vLLM, Ollama, LM Studio, llama.cpp ...).",
        ),
        click.option(
            "--api-key",
            metavar="KEY",
            help="API key (else AGENTDEBUG_API_KEY, OPENAI_API_KEY, config).",
        ),
        click.option("--timeout", type=float, metavar="SECONDS", help="Per-request timeout."),
        click.option(
            "--concurrency", type=int, metavar="N", help="Model requests in flight at once."
        ),
        click.option("--no-cache", is_flag=True, help="Do not read or write the response cache."),
        click.option(
            "--no-fallback",
            is_flag=True,
            help="Fail instead of falling back to the free tier when a model call fails.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def settings_from(params: dict[str, Any]) -> Any:
    """LLMSettings from the model options in ``params`` (removed from it)."""
    from agentdebug.llm import load_settings

    overrides = {
        "model": params.pop("model", None),
        "base_url": params.pop("base_url", None),
        "api_key": params.pop("api_key", None),
        "timeout": params.pop("timeout", None),
        "concurrency": params.pop("concurrency", None),
    }
    if params.pop("no_cache", False):
        overrides["cache"] = False
    if params.pop("no_fallback", False):
        overrides["no_fallback"] = True
    return load_settings(overrides)
