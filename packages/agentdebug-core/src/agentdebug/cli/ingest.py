"""`agentdebug ingest`: import runs from files or folders into the store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentdebug.cli.app import Ctx, cli, pass_ctx
from agentdebug.cli.store_notes import LOCKED, locked_now
from agentdebug.store.base import StoreLocked

if TYPE_CHECKING:
    from agentdebug.io import BatchImport


# -- ingest -------------------------------------------------------------------------------


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    metavar="NAME",
    help="Skip auto-detection and use this importer (`agentdebug plugins` lists them).",
)
@pass_ctx
def ingest(obj: Ctx, paths: tuple[str, ...], fmt: str | None) -> None:
    """Import runs from files or folders into the store.

    Formats are detected per file (Who&When, TRAIL / OpenInference spans, OTLP JSON,
    OpenAI and Anthropic message lists, Phoenix span exports, agentdebug event lists,
    and those of installed plugins: `agentdebug plugins` lists every importer with
    the file suffixes it reads). A folder's *.json, *.jsonl and *.ndjson files are
    read, and those with a suffix an importer declares. Bad files are reported and
    skipped; the exit status is non-zero if any file failed.
    """
    from agentdebug.io import BatchImport, ingest_paths

    if fmt is not None:  # a name no importer has: the command's mistake, not each file's
        from agentdebug.plugins import get_registry

        known = list(get_registry().importers)
        if fmt not in known:
            raise click.BadParameter(
                f"unknown import format '{fmt}' (known: {', '.join(known)})", param_hint="--format"
            )
    store = obj.store
    if locked_now(store):  # (said: a write waits for the lock up to 30 s)
        click.echo(f"Note: the store {store.location} {LOCKED}; waiting for it...", err=True)
    shown = sys.stderr.isatty()  # (a progress line in a log says nothing)
    done = 0

    def on_file(path: Path) -> None:
        nonlocal done
        done += 1
        if shown:
            click.echo(f"\rimporting {done}: {path.name[:60]:<60}", err=True, nl=False)

    batch = BatchImport()
    try:
        ingest_paths(paths, store, format=fmt, on_file=on_file, into=batch)
    except StoreLocked:  # (the error follows; say first what was imported before it)
        if shown and done:
            click.echo("\r" + " " * 80 + "\r", err=True, nl=False)
        _said_of_batch(batch)
        cut = ""
        if batch.saving is not None:
            run_id, files = batch.saving
            joined = f" (joined from {len(files)} files)" if len(files) > 1 else ""
            cut = f" while run '{run_id}' of {files[0]}{joined} was saved"
        click.echo(
            f"stopped: the store's lock outlasted the wait{cut}, with {batch.imported} "
            f"run(s) imported from the {len(batch.files)} file(s) read; importing the same "
            "files again replaces those runs, so nothing is doubled",
            err=True,
        )
        raise
    if shown and done:
        click.echo("\r" + " " * 80 + "\r", err=True, nl=False)
    read = len(batch.files)
    click.echo(f"imported {batch.imported} run(s) from {read} file(s) into {store.location}")
    if _said_of_batch(batch):
        raise click.exceptions.Exit(1)


def _said_of_batch(batch: BatchImport) -> bool:
    """Say on stderr what a batch import noted, passed over and could not read;
    whether any file failed."""
    for note in batch.notes:
        click.echo(f"note: {note}", err=True)
    if batch.skipped:
        names = ", ".join(str(p) for p in batch.skipped[:5])
        more = f" and {len(batch.skipped) - 5} more" if len(batch.skipped) > 5 else ""
        globs = [f"*{suffix}" for suffix in batch.suffixes]
        named = ", ".join(globs[:-1]) + f" or {globs[-1]}" if len(globs) > 1 else globs[0]
        click.echo(
            f"passed over {len(batch.skipped)} file(s) in the folders given, not named "
            f"{named} (name a file to import it): {names}{more}",
            err=True,
        )
    if batch.failures:
        files = len({path for path, _ in batch.failures})
        click.echo(f"{files} file(s) failed, in whole or in part:", err=True)
        for _path, message in batch.failures:
            click.echo(f"  {message}", err=True)
    return bool(batch.failures)
