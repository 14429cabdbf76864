"""The ``agentdebug`` command.

Every error a user can cause is one line on stderr and a non-zero exit; a bug in
agentdebug itself says so and points at ``--debug`` for the traceback.
"""

from __future__ import annotations

import logging
import sys

import click

from agentdebug.cli import bench as _bench  # noqa: F401 - registers `agentdebug bench`
from agentdebug.cli import ingest as _ingest  # noqa: F401 - registers `agentdebug ingest`
from agentdebug.cli import model as _model  # noqa: F401 - registers `config`, `scripted-server`
from agentdebug.cli import prune as _prune  # noqa: F401 - registers `agentdebug prune`
from agentdebug.cli import recover as _recover  # noqa: F401 - registers `act`, `diff`
from agentdebug.cli.app import cli
from agentdebug.errors import AgentDebugError
from agentdebug.store.base import StoreLocked

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 3


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code = cli.main(args=args, prog_name="agentdebug", standalone_mode=False)
        if isinstance(code, int) and code != 0:  # click returns Exit codes when not standalone
            sys.exit(code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_USER_ERROR)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except StoreLocked as exc:  # (after a 30 s wait: say what holds it)
        click.echo(
            f"error: {exc} (another connection holds the store's write lock: a backup, "
            "`agentdebug prune --vacuum`, a sqlite3 shell? Run this again once it is let go)",
            err=True,
        )
        sys.exit(EXIT_USER_ERROR)
    except AgentDebugError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USER_ERROR)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        if debug:
            raise
        click.echo(
            f"internal error: {type(exc).__name__}: {exc} (this is a bug in agentdebug; "
            "rerun with --debug for the traceback)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL_ERROR)


__all__ = ["cli", "main"]
