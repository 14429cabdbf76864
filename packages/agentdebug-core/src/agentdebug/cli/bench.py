"""`agentdebug bench`: score a strategy on Who&When or TRAIL."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import orjson

from agentdebug.cli.app import cli


@cli.group()
def bench() -> None:
    """Score attribution strategies on the public benchmarks."""


def _write(output: Path | None, data: dict[str, Any]) -> None:
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(
            orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
        )
        click.echo(f"wrote {output}", err=True)


@bench.command("whowhen")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--attributor", default="heuristic", show_default=True)
@click.option(
    "--with-reference", is_flag=True, help="Let the strategy see the task's reference answer."
)
@click.option("--workers", default=1, show_default=True, help="Traces diagnosed at once.")
@click.option("--output", type=click.Path(path_type=Path), help="Write the full results as JSON.")
def bench_whowhen(
    paths: tuple[Path, ...],
    attributor: str,
    with_reference: bool,
    workers: int,
    output: Path | None,
) -> None:
    """Who&When: agent and step accuracy per subset and trace length.

    PATHS are Who&When folders or files (both subsets may be given at once).
    """
    from agentdebug.bench import run_whowhen
    from agentdebug.bench.table import whowhen_table
    from agentdebug.bench.whowhen import load_whowhen

    total = len(load_whowhen(paths)[0])
    with click.progressbar(
        length=total, label=f"whowhen/{attributor}", file=sys.stderr, show_pos=True
    ) as bar:
        result = run_whowhen(
            paths,
            attributor=attributor,
            with_reference=with_reference,
            workers=workers,
            progress=lambda _score: bar.update(1),
        )
    setting = "with reference answer" if with_reference else "without reference answer"
    click.echo(f"Who&When, attributor '{attributor}', {setting}, {result.seconds:.1f} s")
    click.echo(whowhen_table(result.groups))
    errors = [s for s in result.scores if s.error]
    if errors:
        click.echo(
            f"{len(errors)} trace(s) had no answer (counted wrong); first: {errors[0].trace}: {errors[0].error}"
        )
    for _path, why in result.failures:
        click.echo(f"unreadable: {why}", err=True)
    _write(output, result.as_dict())


@bench.command("trail")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--attributor", default="heuristic", show_default=True)
@click.option("--output", type=click.Path(path_type=Path), help="Write the full results as JSON.")
def bench_trail(path: Path, attributor: str, output: Path | None) -> None:
    """TRAIL: error location and category, against the human annotations."""
    from agentdebug.bench import run_trail, summarize_trail
    from agentdebug.bench.trail import find_pairs

    total = len(find_pairs(path))
    with click.progressbar(
        length=total, label=f"trail/{attributor}", file=sys.stderr, show_pos=True
    ) as bar:
        result = run_trail(path, attributor=attributor, progress=lambda _s: bar.update(1))
    summary = summarize_trail(result.scores)
    click.echo(
        f"TRAIL, attributor '{attributor}', {summary['traces']} traces, {summary['annotated_errors']} annotated errors, {result.seconds:.1f} s"
    )
    click.echo(f"  location recall            {summary['location_recall']:.1f} %")
    click.echo(f"  location + category recall {summary['location_category_recall']:.1f} %")
    click.echo(f"  category F1 (weighted)     {summary['category']['weighted_f1']:.1f} %")
    click.echo(f"  category F1 (macro)        {summary['category']['macro_f1']:.1f} %")
    click.echo(f"  predictions per trace      {summary['predictions_per_trace']}")
    click.echo(f"  model calls per trace      {summary['calls_per_trace']}")
    for _path, why in result.failures:
        click.echo(f"unreadable: {why}", err=True)
    _write(output, result.as_dict())
