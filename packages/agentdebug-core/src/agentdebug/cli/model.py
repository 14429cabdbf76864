"""Model settings on the command line, and the `config` and `scripted-server` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentdebug.cli.app import cli
from agentdebug.cli.options import model_options, settings_from


@cli.group()
def config() -> None:
    """Show or change the model settings kept in the config file."""


@config.command("show")
@model_options
def config_show(**params: Any) -> None:
    """The settings in effect (flags > environment > config file > defaults)."""
    from agentdebug.llm import config_path

    settings = settings_from(params)
    click.echo(f"config file: {config_path()}")
    for key, value in settings.describe().items():
        click.echo(f"{key:<18} {value}")
    if not settings.configured:
        click.echo("no model configured: diagnosis runs the free tier", err=True)


@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    """Set KEY (model, base_url, api_key, timeout, ...) in the config file
    (`agentdebug config show` lists the keys and what is in effect)."""
    from agentdebug.llm import config_path, write_config_value

    if not value.strip():  # (an empty model or URL is no setting: it only hides one)
        raise click.BadParameter(
            f"empty; to remove {key} from the config file: agentdebug config unset {key}",
            param_hint="VALUE",
        )
    write_config_value(key, value)  # (a value starting with "-" reaches the check: "-5")
    click.echo(f"{key} set in {config_path()}")


@config.command("unset")
@click.argument("key")
def config_unset(key: str) -> None:
    """Remove KEY from the config file."""
    from agentdebug.llm import config_path, unset_config_value

    path = config_path()
    before = path.read_bytes() if path.is_file() else None
    unset_config_value(key)  # (not read_config(): a bad value of KEY is what unset mends)
    was_set = before is not None and path.read_bytes() != before
    click.echo(
        f"{key} removed from {config_path()}"
        if was_set
        else f"{key} was not set in {config_path()}"
    )


@config.command("path")
def config_where() -> None:
    """Print where the config file is (AGENTDEBUG_CONFIG overrides it)."""
    from agentdebug.llm import config_path

    click.echo(str(config_path()))


@cli.command("scripted-server")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--script",
    "script_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A JSON file of the answers to give, by the name of the schema asked for "
    '({"Attribution": {...}, "*": {...}}; a list: in turn; {"$status": 429} an '
    "error). Without one: a minimal valid instance of the schema.",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append every request (the schema's name, the messages) and its answer to this "
    "file, a JSON line each: the prompts agentdebug sends.",
)
def scripted_server(port: int, script_path: Path | None, log_path: Path | None) -> None:
    """Run a local OpenAI-compatible server that answers from a script file, or
    with a minimal valid instance of the requested JSON schema.

    For dry runs: `agentdebug diagnose RUN --attributor all-at-once --base-url
    http://127.0.0.1:8765/v1 --model scripted` exercises the whole model path
    (prompts, structured output, token counts, cache) without a real model;
    `--log` shows what was asked and `--script` what to answer. Without a script
    the answers carry no judgement, so what they conclude means nothing.
    """
    from agentdebug.llm.script_file import ScriptError, load_script, logged
    from agentdebug.llm.testing import Answerer, schema_answerer, serve_forever

    answerer: Answerer = schema_answerer
    if script_path is not None:
        try:
            answerer = load_script(script_path)
        except ScriptError as exc:
            raise click.BadParameter(str(exc), param_hint="--script") from None
    if log_path is not None:
        answerer = logged(answerer, log_path)
    try:
        serve_forever(port, answerer)
    except OSError as exc:  # the port taken, or not ours to bind
        raise click.UsageError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None
