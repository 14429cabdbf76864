"""`agentdebug bench`: score a strategy on Who&When or TRAIL."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import orjson

from agentdebug.cli.app import cli
from agentdebug.cli.options import model_options, settings_from


@cli.group()
def bench() -> None:
    """Score attribution strategies on the public benchmarks.

    Model answers are cached (keyed by the full request), so an interrupted run
    resumes where it stopped and a finished one replays for free.
    """


def _write(output: Path | None, data: dict[str, Any]) -> None:
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
        click.echo(f"wrote {output}", err=True)


def _budget(text: str | None) -> Any:
    from agentdebug.llm import Budget

    return Budget.parse(text) if text else None


def _none_answered(total: int, trace: str, error: str | None) -> None:
    """Fail the command: a table where no trace was answered measures the setup,
    not the strategy, and a script must not take it for a result."""
    from agentdebug.errors import AgentDebugError

    raise AgentDebugError(f"no trace was answered (all {total} failed); first: {trace}: {error}")


def _cost_line(calls: float, cached: float, tokens_in: float, tokens_out: float) -> str:
    return (
        f"model calls per trace {calls:.2f} (+{cached:.2f} from cache), "
        f"input tokens per trace {tokens_in:.0f}, output {tokens_out:.0f}"
    )


@bench.command("whowhen")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--attributor", default="heuristic", show_default=True)
@click.option("--with-reference", is_flag=True, help="Let the strategy see the reference answer.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Traces diagnosed at once.",
)
@click.option(
    "--budget", metavar="LIMIT", help="Per-trace cap on model use (as diagnose --budget)."
)
@click.option("--output", type=click.Path(path_type=Path), help="Write the full results as JSON.")
@model_options
def bench_whowhen(
    paths: tuple[Path, ...],
    attributor: str,
    with_reference: bool,
    workers: int,
    budget: str | None,
    output: Path | None,
    **model: Any,
) -> None:
    """Who&When: agent and step accuracy per subset and trace length.

    PATHS are Who&When folders or files (both subsets may be given at once).
    """
    from agentdebug.bench import run_whowhen
    from agentdebug.bench.table import whowhen_table
    from agentdebug.bench.whowhen import load_whowhen

    settings = settings_from(model)
    total = len(load_whowhen(paths)[0])
    with click.progressbar(
        length=total, label=f"whowhen/{attributor}", file=sys.stderr, show_pos=True
    ) as bar:
        result = run_whowhen(
            paths,
            attributor=attributor,
            with_reference=with_reference,
            workers=workers,
            settings=settings,
            budget=_budget(budget),
            progress=lambda _score: bar.update(1),
        )
    setting = "with reference answer" if with_reference else "without reference answer"
    model_name = settings.model or "no model"
    click.echo(
        f"Who&When, attributor '{attributor}' ({model_name}), {setting}, {result.seconds:.1f} s"
    )
    click.echo(whowhen_table(result.groups))
    scores = result.scores
    n = max(1, len(scores))
    click.echo(
        _cost_line(
            sum(s.calls for s in scores) / n,
            sum(s.cached_calls for s in scores) / n,
            sum(s.input_tokens for s in scores) / n,
            sum(s.output_tokens for s in scores) / n,
        )
    )
    errors = [s for s in scores if s.error]
    if errors:
        click.echo(
            f"{len(errors)} trace(s) had no answer (counted wrong); "
            f"first: {errors[0].trace}: {errors[0].error}"
        )
    for _path, why in result.failures:
        click.echo(f"unreadable: {why}", err=True)
    _write(output, result.as_dict())
    if scores and len(errors) == len(scores):
        _none_answered(len(scores), errors[0].trace, errors[0].error)


@bench.command("trail")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--attributor", default="heuristic", show_default=True)
@click.option("--judge", is_flag=True, help="Run the LLM judge detector on every trace.")
@click.option(
    "--budget", metavar="LIMIT", help="Per-trace cap on model use (as diagnose --budget)."
)
@click.option("--output", type=click.Path(path_type=Path), help="Write the full results as JSON.")
@model_options
def bench_trail(
    path: Path,
    attributor: str,
    judge: bool,
    budget: str | None,
    output: Path | None,
    **model: Any,
) -> None:
    """TRAIL: error location and category, against the human annotations."""
    from agentdebug.bench import run_trail, summarize_trail
    from agentdebug.bench.trail import find_pairs

    settings = settings_from(model)
    total = len(find_pairs(path))
    with click.progressbar(
        length=total, label=f"trail/{attributor}", file=sys.stderr, show_pos=True
    ) as bar:
        result = run_trail(
            path,
            attributor=attributor,
            judge=judge,
            settings=settings,
            budget=_budget(budget),
            progress=lambda _s: bar.update(1),
        )
    summary = summarize_trail(result.scores)
    click.echo(
        f"TRAIL, attributor '{attributor}'{' + judge' if judge else ''} "
        f"({settings.model or 'no model'}), {summary['traces']} traces, "
        f"{summary['annotated_errors']} annotated errors, {result.seconds:.1f} s"
    )
    click.echo(f"  location recall            {summary['location_recall']:.1f} %")
    click.echo(f"  location + category recall {summary['location_category_recall']:.1f} %")
    click.echo(f"  category F1 (weighted)     {summary['category']['weighted_f1']:.1f} %")
    click.echo(f"  category F1 (macro)        {summary['category']['macro_f1']:.1f} %")
    click.echo(f"  predictions per trace      {summary['predictions_per_trace']}")
    click.echo(f"  model calls per trace      {summary['calls_per_trace']}")
    first = next((s for s in result.scores if s.error), None)
    if first is not None:
        click.echo(f"  {summary['failed']} trace(s) failed; first: {first.trace}: {first.error}")
    for _path, why in result.failures:
        click.echo(f"unreadable: {why}", err=True)
    _write(output, result.as_dict())
    if first is not None and all(s.error for s in result.scores):
        _none_answered(len(result.scores), first.trace, first.error)
