"""Commands of the recovery half of the loop: ``act`` (plan, gate, rerun) and ``diff``."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

import click
import orjson

from agentdebug.cli.app import Ctx, abandoned_view, cli, pass_ctx
from agentdebug.cli.options import model_options, settings_from
from agentdebug.cli.values import nonempty
from agentdebug.detect.signals import CODE_FIX
from agentdebug.errors import AgentDebugError
from agentdebug.schema import (
    AgentTrajectory,
    Attempt,
    DiagnosticReport,
    LoopResult,
    OutcomeStatus,
)


def _latest_report(obj: Ctx, run: AgentTrajectory) -> DiagnosticReport | None:
    """The run's latest report made on this view of it (a run that continues
    another is read with its history; a report made on it alone names other steps)."""
    from agentdebug.store.history import made_on

    fitting = [r for r in obj.store.load_reports(run.id) if made_on(r, run)]
    return fitting[-1] if fitting else None


@cli.command()
@click.argument("run_id", callback=nonempty)
@click.option(
    "--recover",
    "strategy",
    default="native",
    show_default=True,
    help="Recoverer: native (the diagnosis's own fix, no model call), reflexion, critic, "
    "automanual, or one a plugin adds.",
)
@click.option("--rerun", is_flag=True, help="Rerun from the blamed step (behind the gate).")
@click.option(
    "--executor",
    metavar="MODULE:FACTORY",
    help="Rerun executor to build; default: the installed one for the run's framework.",
)
@click.option(
    "--executor-option",
    "executor_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option for the rerun executor (repeatable): a keyword argument of "
    "--executor's factory, or one the installed executor takes (LangGraph: "
    "replay_answers, isolate, asynchronous, directive_key, recursion_limit, "
    "success_check, directive_update).",
)
@click.option(
    "--policy",
    type=click.Choice(["ask", "auto", "never"]),
    default="ask",
    show_default=True,
    help="Gate: ask on the terminal, approve automatically, or never rerun.",
)
@click.option(
    "--max-rounds", default=3, show_default=True, type=click.IntRange(min=1), help="Loop limit."
)
@click.option(
    "--scorer",
    type=click.Choice(["default", "reference", "outcome", "llm"]),
    help="How a branch is judged. default: the run's recorded outcome (the framework's "
    "success check) when it has one, else its reference answer.",
)
@click.option(
    "--attributor",
    help="Diagnose with this attributor when the run has no report yet (and for branches); "
    "default: auto with a model, heuristic without.",
)
@click.option("--fresh", is_flag=True, help="Diagnose again even if the run has a report.")
@click.option(
    "--format", "out_fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@model_options
@pass_ctx
def act(
    obj: Ctx,
    /,
    run_id: str,
    strategy: str,
    rerun: bool,
    executor: str | None,
    executor_options: tuple[str, ...],
    policy: str,
    max_rounds: int,
    scorer: str | None,
    attributor: str | None,
    fresh: bool,
    out_fmt: str,
    **model: Any,
) -> None:
    """Turn a run's diagnosis into a retry directive; with --rerun, close the loop.

    Without --rerun the plan is printed and kept on the report (suggest-only).
    With --rerun the gate decides, the executor reruns the run from the blamed
    step with the directive, the branch is stored beside the original and scored,
    and a failing branch goes round again (up to --max-rounds).
    """
    from agentdebug import AgentDebug
    from agentdebug.capture.auto import configured_attributor
    from agentdebug.llm import use_settings
    from agentdebug.plugins import get_registry
    from agentdebug.report import shown
    from agentdebug.rerun import (
        closed_loop,
        compare,
        configure_executor,
        find_executor,
        load_executor,
        make_scorer,
    )
    from agentdebug.rerun.executors import parse_options
    from agentdebug.rerun.loop import recover_plan
    from agentdebug.rerun.record import save_attempt

    given = dict(model)  # (settings_from takes them out: the suggested command repeats them)
    settings = settings_from(model)
    options = parse_options(executor_options)
    if options and not rerun:
        raise click.UsageError("--executor-option configures a rerun: add --rerun")
    store = obj.settled_store
    dbg = AgentDebug(store)
    run = dbg.history(store.load_trajectory(store.resolve_id(run_id)))  # (a continuing run)
    # a run still going (not one whose process died) has no failure yet to plan against
    if abandoned_view(run)[0].outcome.status is OutcomeStatus.RUNNING:
        raise click.ClickException(
            f"run {run.id} is still running: it has no outcome yet (a run waiting at an "
            "interrupt for a person's answer stays running until it is resumed), so "
            f"there is nothing to act on until it ends; `agentdebug show {run.id}` shows "
            "where it is"
        )
    with use_settings(settings):
        chosen = attributor or configured_attributor()
        report = None if fresh else _latest_report(obj, run)
        if report is not None and report.root_cause is None and report.fix is None:
            # (a diagnosis tried since, say with an attributor that gave no answer,
            # is no plan's ground: act on a fresh one rather than refuse)
            click.echo(
                f"Note: the run's latest diagnosis ({report.id}) names no root cause; "
                f"diagnosing it again ({chosen}).",
                err=out_fmt == "json",
            )
            report = None
        reg = get_registry()
        recoverer = reg.recoverer(strategy)
        if not rerun:
            judge = make_scorer(scorer)
            try:
                passed: Any = judge.score(run, run)
            except Exception:  # (no verdict to read, no model: the plan is all it asks)
                passed = None
            if passed is not None and passed.success:  # (nothing to plan for a run that passes)
                if out_fmt == "json":
                    status = {"run_id": run.id, "status": "already_ok", "detail": passed.reason}
                    click.echo(orjson.dumps(status, option=orjson.OPT_INDENT_2).decode())
                else:
                    click.echo(
                        f"Run {run.id} already passes the {judge.name} scorer: "
                        f"{passed.reason}. Nothing to act on."
                    )
                return
            if report is None:
                report = dbg.diagnose(run, attributor=chosen)
            root = report.root_cause
            code = root.metadata.get(CODE_FIX) if root is not None else None
            if code and report.fix is not None:
                no_rerun = (  # (a rerun runs the same code, or meets the same history)
                    code
                    if isinstance(code, str)
                    else "the fix is a change to code that ran, which a rerun from its step "
                    "would run unchanged. Change it, then run the agent again"
                )
                click.echo(
                    shown(
                        [
                            report.summary,
                            f"\nFix: {report.fix.directive}",
                            f"\nNo rerun: {no_rerun}.",
                        ]
                    )
                )
                return
            made, _, why = recover_plan(recoverer, run, report)  # (a plugin's bug: named)
            if made is None:
                raise AgentDebugError(why or f"recoverer '{recoverer.name}' made no plan")
            plan = made
            save_attempt(
                store, report, Attempt(round=1, run_id=run.id, report_id=report.id, plan=plan)
            )
            if out_fmt == "json":
                click.echo(plan.model_dump_json(indent=2))
                return
            lines = [
                report.summary,
                f"\nPlan ({plan.strategy}): rerun from step {plan.resume_step}"
                + (f" ({plan.target_agent})" if plan.target_agent else ""),
                f"Directive: {plan.directive}",
                *([f"Why: {plan.rationale}"] if plan.rationale else []),
                *(f"Note: {note}" for note in plan.notes),
                f"\nSuggest-only. To rerun: agentdebug act {run.id} --recover {strategy} --rerun"
                + _model_flags(given),
            ]
            click.echo(shown(lines))  # (recorded names and text: control characters escaped)
            return
        if os.getcwd() not in sys.path:  # as with python -m: a module:function named
            sys.path.insert(0, os.getcwd())  # here (--executor, a recorded factory) resolves
        ex: Any = None
        if executor:
            ex = load_executor(executor, **options)
        elif options or run.framework in reg.rerun_executors:
            ex = configure_executor(find_executor(run.framework, reg), options)
        # (else the loop looks for one once it has judged the run: one that already
        # passes needs none, and one that fails is told which to install)

        def say(msg: str) -> None:
            click.echo(shown([msg]), err=out_fmt == "json")

        try:
            result = closed_loop(
                run,
                debugger=dbg,
                executor=ex,
                recoverer=recoverer,
                policy=policy,  # type: ignore[arg-type]
                scorer=scorer,
                max_rounds=max_rounds,
                report=report,  # (None: the loop diagnoses the run, unless it already passes)
                attributor=chosen,
                progress=say,
            )
        except KeyboardInterrupt:  # (the loop has said what it kept; main() would say "aborted")
            click.echo(
                f"\nLoop stopped (Ctrl-C). The original run {run.id} is kept; "
                f"its reruns: agentdebug list --branches-of {run.id}",
                err=True,
            )
            sys.exit(130)
    if out_fmt == "json":
        click.echo(result.model_dump_json(indent=2))
    else:
        click.echo(shown([_summary(result)]))
        if result.final_run_id and result.final_run_id != run.id:
            click.echo("")
            click.echo(shown([compare(run, store.load_trajectory(result.final_run_id)).render()]))
    if result.status not in ("succeeded", "already_ok"):
        sys.exit(2)


def _summary(result: LoopResult) -> str:
    lines = [f"\nLoop {result.status}: {result.detail}"]
    for a in result.attempts:
        parts = [f"  round {a.round}: run {a.run_id}"]
        if a.decision is not None:
            parts.append(f"gate {'approved' if a.decision.approved else 'refused'}")
        if a.branch_id:
            parts.append(f"branch {a.branch_id}")
        if a.score is not None:
            parts.append(f"{'passed' if a.score.success else 'failed'} ({a.score.scorer})")
        if a.error and a.error != result.detail:  # (the line above says it already)
            parts.append(a.error)
        lines.append(", ".join(parts))
    if result.verified_by_rerun is not None:
        lines.append(
            "Root cause: "
            + ("verified by rerun" if result.verified_by_rerun else "not confirmed by rerun")
        )
    return "\n".join(lines)


@cli.command()
@click.argument("run_a", callback=nonempty)
@click.argument("run_b", callback=nonempty)
@click.option(
    "--format", "out_fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--limit",
    default=40,
    show_default=True,
    type=click.IntRange(min=1),
    help="Aligned events to show.",
)
@pass_ctx
def diff(obj: Ctx, run_a: str, run_b: str, out_fmt: str, limit: int) -> None:
    """Compare two runs (an original and its branch): outcomes, shared prefix,
    first divergence, and the aligned events from there."""
    from agentdebug.report import shown
    from agentdebug.rerun import compare

    store = obj.settled_store
    a = store.load_trajectory(store.resolve_id(run_a))
    b = store.load_trajectory(store.resolve_id(run_b))
    result = compare(a, b)
    if out_fmt == "json":
        click.echo(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(shown([result.render(limit=limit)]))  # (a recorded \x1b: an escape)


def _model_flags(model: dict[str, Any]) -> str:
    """The model flags this command was given, for the command it suggests (the key
    left out: it is not printed)."""
    flags = [
        f" --{name.replace('_', '-')} {shlex.quote(str(value))}"
        for name in ("model", "base_url")
        if (value := model.get(name))
    ]
    if model.get("api_key"):
        flags.append(" --api-key ...")
    return "".join(flags)
