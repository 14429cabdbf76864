"""Commands about runs: ingest, list, show, diagnose, schema, and the registry views."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from agentdebug.capture.process import abandoned, abandoned_outcome, gone, settle_abandoned
from agentdebug.cli.options import model_options, settings_from
from agentdebug.cli.store_notes import locked_now, unwritable
from agentdebug.cli.values import META_HELP, metadata_filters, nonempty, parse_when
from agentdebug.errors import AgentDebugError, InputError, RecordsSkipped
from agentdebug.schema import AgentTrajectory, DiagnosticReport, OutcomeStatus
from agentdebug.store import RunQuery, TraceStore, open_store, store_file
from agentdebug.store.base import StoreLocked, recorder_of
from agentdebug.text import shorten


class Ctx:
    """What every command shares: where the store is, opened on first use."""

    def __init__(self, store: str | None) -> None:
        self.location = store
        self._store: TraceStore | None = None
        self._settled = False

    @property
    def store(self) -> TraceStore:
        if self._store is None:
            self._store = open_store(self.location)
        return self._store

    @property
    def existing_store(self) -> TraceStore:
        """The store, for a command that only reads runs: one that is not there is
        an error naming where it was looked for (not an empty store made there)."""
        if self._store is None:
            where = store_file(self.location)
            if not where.exists() and not where.parent.is_file():  # (that: open_store says)
                given = "--store / $AGENTDEBUG_HOME" if self.location else "the default location"
                raise InputError(
                    f"no agentdebug store here ({given}); record or ingest a run first, "
                    "or give the store's folder, .db or .jsonl file with --store",
                    source=str(where),
                )
        return self.store

    @property
    def settled_store(self) -> TraceStore:
        """The existing store, its abandoned runs (those a killed process of this
        machine left "running") stored as ended first, where this user may write
        it: what the commands that read runs (``list``, ``show``, ``diagnose``,
        ``act``, ``diff``, ``prune``) read."""
        store = self.existing_store
        if not self._settled:
            self._settled = True
            if not getattr(store, "read_only", None) and not locked_now(store):
                settle_abandoned(store)  # (a lock: left for a later command)
        return store


pass_ctx = click.make_pass_decorator(Ctx)


def abandoned_view(trajectory: AgentTrajectory) -> tuple[AgentTrajectory, str | None]:
    """A run stored "running" whose process is gone, in a store that could not be
    settled (read-only here): read as the abandoned run it is, with a note."""
    if trajectory.outcome.status is not OutcomeStatus.RUNNING:
        return trajectory, None
    why = gone(recorder_of(trajectory.metadata))
    if why is None:
        return trajectory, None
    note = (
        f"Note: run {trajectory.id} was abandoned ({why}); it is still stored as "
        "running (the store is read-only here, or could not be written just now)."
    )
    return trajectory.model_copy(update={"outcome": abandoned_outcome(why)}), note


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--store",
    envvar="AGENTDEBUG_HOME",
    metavar="PATH",
    help="Store location: a folder (SQLite inside), a .db (.sqlite, .sqlite3) file, or a "
    ".jsonl file. "
    "Default: $AGENTDEBUG_HOME or ./.agentdebug",
)
@click.option("--debug", is_flag=True, help="Verbose logs and full tracebacks.")
@click.version_option(package_name="agentdebug-core", prog_name="agentdebug")
@click.pass_context
def cli(ctx: click.Context, store: str | None, debug: bool) -> None:
    """Capture, diagnose and fix failing LLM agent runs.

    \b
    Exit status: 0 done; 1 an error in what was asked (a file, a run id, a value;
    said in one line on stderr), or an `ingest` with a file that failed; 2 a usage
    error (an unknown option, a bad choice), or an `act --rerun` whose loop did
    not succeed; 3 a bug in agentdebug (--debug shows its traceback); 130 `act`
    stopped by Ctrl-C.
    """
    ctx.obj = Ctx(store)


# -- list / show ---------------------------------------------------------------------------


def _known_mode(failure_mode: str) -> None:
    """A ``--mode`` that matched no run: an error if no taxonomy here has it (a
    typo, a short name), rather than "no runs match". A mode only a plugin of
    another environment knows still lists the runs that have it."""
    from agentdebug.plugins import get_registry

    known = get_registry().failure_modes
    if failure_mode not in known:
        near = [m for m in sorted(known) if failure_mode.split(".")[-1] in m]
        hint = f"; did you mean {', '.join(near[:5])}?" if near else ""
        raise InputError(
            f"unknown failure mode '{failure_mode}'{hint} (`agentdebug taxonomy` lists them)",
            field="--mode",
        )


@cli.command("list")
@click.option("--status", type=click.Choice(["success", "failure", "unknown", "running"]))
@click.option("--framework", metavar="NAME", callback=nonempty)
@click.option("--agent", metavar="NAME", callback=nonempty, help="Runs in which this agent acted.")
@click.option(
    "--mode",
    "failure_mode",
    metavar="MODE_ID",
    callback=nonempty,
    help="Runs whose diagnosis found this failure mode.",
)
@click.option(
    "--since",
    metavar="WHEN",
    callback=nonempty,
    help="Started since: an ISO date, or an age (2h, 7d).",
)
@click.option("--until", metavar="WHEN", callback=nonempty, help="Started by then (as --since).")
@click.option(
    "--branches-of",
    "parent",
    metavar="RUN_ID",
    callback=nonempty,
    help="Only the reruns of this run (a loop's later rounds, branches of branches, too).",
)
@click.option("--meta", metavar="PATH=VALUE", multiple=True, help=META_HELP)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@pass_ctx
def list_runs(
    obj: Ctx,
    status: str | None,
    framework: str | None,
    agent: str | None,
    failure_mode: str | None,
    since: str | None,
    until: str | None,
    parent: str | None,
    meta: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """List stored runs, newest first, one line each. The root cause is marked with
    what a rerun said of it: ✓ verified, ✗ not confirmed (→ the blame a later
    round's passing branch corrected, if one did)."""
    from dataclasses import asdict

    from agentdebug.store import RunSummary
    from agentdebug.text import visible

    def blamed(agent: str | None, step: int | None, room: int) -> str:
        """``agent@step`` in ``room`` characters: a long name cut short (…), the step kept."""
        at, name = ("" if step is None else f"@{step}"), visible(agent or "")
        if len(name) + len(at) > room:
            name = name[: max(room - len(at) - 1, 1)] + "…"
        return name + at

    def root_column(run: RunSummary, width: int = 28) -> str:
        if run.root_agent is None:
            return "-"
        mark = {True: " ✓", False: " ✗", None: ""}[run.verified]
        if run.later is None:
            return (blamed(run.root_agent, run.root_step, width - len(mark)) + mark)[:width]
        then = blamed(run.later.agent, run.later.step, width)
        room = width - len(mark) - 2  # (the names' share: the mark and " →" kept whole)
        root = blamed(run.root_agent, run.root_step, max(room - len(then), room // 2))
        then = blamed(run.later.agent, run.later.step, room - len(root))
        return f"{root}{mark} →{then}"[:width]

    query = RunQuery(
        status=status,
        framework=framework,
        agent=agent,
        failure_mode=failure_mode,
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        descends_from=obj.settled_store.resolve_id(parent) if parent else None,
        metadata=metadata_filters(meta),
        limit=limit,
    )
    runs = obj.settled_store.list_runs(query)
    if not runs and failure_mode is not None:
        _known_mode(failure_mode)
    # (wide enough for every id listed: a 32-hex trace id keeps the columns in line)
    id_w = max([28, *(len(visible(run.id)) for run in runs)])
    if runs and not as_json:  # (what each column is; --json for scripts)
        click.echo(
            f"{'RUN':<{id_w}} {'STATUS':<9} {'FRAMEWORK':<14} {'EVENTS':>6}  {'STARTED':<16}  "
            f"{'ROOT CAUSE':<28} GOAL"
        )
    left = abandoned(runs)  # (left "running" in a store that is read-only here)
    for run in runs:
        status = "abandoned" if run.id in left else run.status
        if as_json:
            click.echo(
                orjson.dumps(
                    {
                        "id": run.id,
                        "goal": run.goal,
                        "framework": run.framework,
                        "status": run.status,
                        **({"abandoned": left[run.id]} if run.id in left else {}),
                        "started_at": run.started_at.isoformat() if run.started_at else None,
                        "events": run.n_events,
                        "failure_modes": run.failure_modes,
                        "root_agent": run.root_agent,
                        "root_step": run.root_step,
                        # what a rerun said of the root cause (None: not tried), and
                        # when not confirmed, the blame a later round's branch passed with
                        "verified": run.verified,
                        "later_blame": asdict(run.later) if run.later else None,
                        "parent_id": run.parent_id,
                        "continues": run.continues,
                        "within": run.within,
                    }
                ).decode()
            )
            continue
        started = run.started_at.strftime("%Y-%m-%d %H:%M") if run.started_at else "-"
        root = root_column(run)
        goal = " ".join((run.goal or "").split())
        if run.parent_id:
            goal = f"[branch of {run.parent_id}] {goal}"
        elif run.continues:
            goal = f"[continues {run.continues}] {goal}"
        elif run.within:
            goal = f"[within {run.within}] {goal}"
        framework = visible(run.framework or "-")[:14]
        click.echo(  # (control characters in a recorded name or goal shown as escapes)
            f"{visible(run.id):<{id_w}} {status:<9} {framework:<14} {run.n_events:>6}  "
            f"{started:<16}  {root:<28} {shorten(visible(goal), 80)}"
        )
    if not runs and not as_json:
        click.echo("no runs match", err=True)


@cli.command()
@click.argument("run_id", callback=nonempty)
@click.option("--width", default=100, show_default=True, type=click.IntRange(min=40))
@click.option(
    "--history",
    is_flag=True,
    help="With the runs it continues (a resume, a retry), their steps first.",
)
@pass_ctx
def show(obj: Ctx, run_id: str, width: int, history: bool) -> None:
    """Show a stored run's timeline (RUN_ID: an id, or a prefix of one that no other
    run's id has)."""
    from agentdebug.report import render_run
    from agentdebug.store.history import with_history

    store = obj.settled_store
    full = store.resolve_id(run_id)
    trajectory, note = abandoned_view(store.load_trajectory(full))
    if note:
        click.echo(note, err=True)
    if history:
        trajectory = with_history(store, trajectory)
    branches = store.list_runs(RunQuery(descends_from=full, limit=None))
    click.echo(
        render_run(trajectory, width=width, reports=store.load_reports(full), branches=branches)
    )


# -- diagnose ------------------------------------------------------------------------------


def _stored(obj: Ctx, target: str) -> bool:
    """Whether ``target``, not written as a path, is the id of a run of the store
    (the whole id: a folder named as a prefix of one is no run)."""
    if any(sep in target for sep in ("/", "\\")):
        return False
    try:
        return bool(obj.settled_store.resolve_id(target) == target)
    except AgentDebugError:
        return False


def _targets(
    obj: Ctx, target: str, fmt: str | None, keep: bool, history: bool = True
) -> list[AgentTrajectory]:
    from agentdebug.io import RunIds, import_file, save_imported, stamped
    from agentdebug.store.history import with_history

    path = Path(target)
    # (a folder is no run file: a folder named as a stored run, its artifacts, is
    # passed over for the run; written as a path, it is refused below)
    if path.exists() and not (path.is_dir() and _stored(obj, target)):
        try:
            runs = import_file(path, format=fmt)
        except RecordsSkipped as exc:  # the runs that could be read are diagnosed
            if not exc.runs:
                raise
            for error in exc.errors:
                click.echo(f"skipped: {error}", err=True)
            runs = exc.runs
        if keep:
            notes: list[str] = []
            ids = RunIds(notes, obj.store)
            runs = [save_imported(ids, run, path) for run in stamped(runs, path)]
            for said in notes:
                click.echo(f"note: {said}", err=True)

        return [run.trajectory for run in runs]
    if any(sep in target for sep in ("/", "\\")) or target.endswith((".json", ".jsonl", ".ndjson")):
        raise InputError("no such file", source=target)
    store = obj.settled_store
    run, note = abandoned_view(store.load_trajectory(store.resolve_id(target)))
    if note:
        click.echo(note, err=True)
    return [with_history(store, run) if history else run]


@cli.command()
@click.argument("target", metavar="RUN_ID|FILE", callback=nonempty)
@click.option(
    "--format",
    "out_fmt",
    type=click.Choice(["text", "json", "jsonl", "md"]),
    default="text",
    show_default=True,
    help="json: one report object for one run, an array for several; jsonl: one report "
    "object a line, for any number of runs.",
)
@click.option(
    "--attributor",
    default=None,
    help="Strategy: heuristic, all-at-once, step-by-step, binary-search, lifecycle, deepdebug, "
    "or auto (the router). Default: auto when a model is configured, as `act` and the "
    "automatic diagnosis choose, else heuristic.",
)
@click.option(
    "--budget",
    metavar="LIMIT",
    help="Cap model use: 20000 (tokens), 8calls, or 8calls,50000tokens.",
)
@click.option("--judge", is_flag=True, help="Also run the LLM judge detector (one model call).")
@click.option(
    "--with-reference", is_flag=True, help="Let strategies see the run's reference answer."
)
@click.option(
    "--input-format", "in_fmt", metavar="NAME", help="Importer to use when TARGET is a file."
)
@click.option("--no-store", is_flag=True, help="Do not keep the imported run and the report.")
@click.option(
    "--alone",
    is_flag=True,
    help="A run that continues another (a resume, a retry): without the runs before it.",
)
@click.option("--width", default=100, show_default=True, type=click.IntRange(min=40))
@model_options
@pass_ctx
def diagnose(
    obj: Ctx,
    /,
    target: str,
    out_fmt: str,
    attributor: str | None,
    budget: str | None,
    judge: bool,
    with_reference: bool,
    in_fmt: str | None,
    no_store: bool,
    alone: bool,
    width: int,
    **model: Any,
) -> None:
    """Diagnose a stored run (by id or id prefix) or a run file.

    With no model configured this is the free tier (rules and heuristic
    attribution). Configure a model with --model/--base-url/--api-key, the
    AGENTDEBUG_* (or OPENAI_*) environment variables, or `agentdebug config set`.
    A stored run that continues another (a resume served by another worker, a
    retry) is diagnosed with the runs before it, where its cause may be.
    """
    from agentdebug.diagnose import diagnose as run_diagnosis
    from agentdebug.llm import Budget
    from agentdebug.report import render
    from agentdebug.rerun.record import carried_verification

    settings = settings_from(model)
    # (the strategy the run's report was made with when it failed: re-diagnosing it
    # without a word of which must not swap a model's, rerun-verified, for the free tier's)
    chosen = attributor or ("auto" if settings.configured else "heuristic")
    limit = Budget.parse(budget) if budget else None
    if not no_store and store_file(obj.location).exists() and (why := unwritable(obj.store)):
        click.echo(
            f"Note: the store {obj.store.location} {why}; the diagnosis is shown, not stored.",
            err=True,
        )
        no_store = True
    trajectories = _targets(obj, target, in_fmt, keep=not no_store, history=not alone)
    reports: list[dict[str, Any]] = []
    for trajectory in trajectories:
        with _said_when_slow(trajectory.id, settings if chosen != "heuristic" else None):
            report: DiagnosticReport = run_diagnosis(
                trajectory,
                attributor=chosen,
                settings=settings,
                budget=limit,
                judge=judge,
                with_reference=with_reference,
            )
        running = trajectory.outcome.status is OutcomeStatus.RUNNING
        if running:  # (a report of part of a run would stand for the whole of it)
            click.echo(
                f"Note: run {trajectory.id} has not ended (still running, or its process "
                "died where this one cannot see): this diagnosis reads what it recorded so "
                "far, and is not stored.",
                err=True,
            )
        kept = None
        if not no_store and not running:
            report = carried_verification(obj.store, report)
            kept = _verified_other(obj.store, report)
        if kept is not None:  # (shown, not stored: the verified one stays the latest)
            root = kept.root_cause
            click.echo(
                f"Note: not stored: run {trajectory.id}'s diagnosis {kept.id}, which a rerun "
                f"verified ({root.agent_name if root else '?'} at step "
                f"{root.step_index if root else '?'}), stays the one `agentdebug act` uses; "
                "this one names another step and was not verified (--no-store shows a "
                "diagnosis without storing it).",
                err=True,
            )
        elif not no_store and not running:
            try:
                obj.store.save_report(report)
            except StoreLocked as exc:  # (a lock taken since: waited out for 30 s)
                click.echo(f"Note: {exc}; the diagnosis is shown, not stored.", err=True)
            else:
                if Path(target).exists():  # (a file: its run was imported to be diagnosed)
                    click.echo(
                        f"kept in {obj.store.location} as run {trajectory.id}, with this "
                        "diagnosis (--no-store keeps nothing)",
                        err=True,
                    )
        if out_fmt == "json" and len(trajectories) > 1:
            reports.append(report.model_dump(mode="json"))
            continue
        click.echo(render(report, trajectory, out_fmt, width=width))
    if reports:
        click.echo(orjson.dumps(reports, option=orjson.OPT_INDENT_2).decode())


def _verified_other(store: TraceStore, report: DiagnosticReport) -> DiagnosticReport | None:
    """The run's latest stored report, when a rerun verified it and ``report``, not
    verified, names another root cause: a re-diagnosis (a model that did not answer
    this time, the free tier asked for) does not replace what a rerun proved (a
    review: `act` then planned from the free tier's blame). None otherwise."""
    if report.verified_by_rerun:
        return None
    try:
        earlier = store.load_reports(report.trajectory_id)
    except Exception:  # (an unreadable store: the save says so)
        return None
    from agentdebug.rerun.record import runs_read

    last = earlier[-1] if earlier else None
    if last is None or not last.verified_by_rerun or last.root_cause is None:
        return None
    if runs_read(last) != runs_read(report):
        return None  # (read with its history, or without: steps numbered otherwise)
    new, old = report.root_cause, last.root_cause
    same = new is not None and (new.agent_name, new.step_index) == (
        old.agent_name,
        old.step_index,
    )
    return None if same else last


#: Seconds a diagnosis waits on the model before `diagnose` says so on stderr.
WAIT_NOTICE = 5.0


@contextlib.contextmanager
def _said_when_slow(run_id: str, settings: Any) -> Iterator[None]:
    """After ``WAIT_NOTICE`` seconds of a diagnosis that asks a model, one line on
    stderr saying it waits and how long it may (a review: a hung endpoint left the
    command silent for five minutes)."""
    if settings is None or not getattr(settings, "configured", False):
        yield
        return
    where = f" at {settings.base_url}" if settings.base_url else ""
    tries = settings.max_retries + 1
    line = (
        f"Waiting for model '{settings.model}'{where} to diagnose run {run_id}: up to "
        f"{settings.timeout:g} s a call, {tries} attempt(s) each (--timeout; Ctrl-C stops)"
    )
    timer = threading.Timer(WAIT_NOTICE, lambda: click.echo(line, err=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


# -- schema and registry views -------------------------------------------------------------------


@cli.command()
@click.option(
    "--what",
    type=click.Choice(["trajectory", "event", "report"]),
    default="trajectory",
    show_default=True,
)
def schema(what: str) -> None:
    """Print the JSON Schema of the trace (or of an event or a report)."""
    from agentdebug.schema import AgentEvent

    schemas: dict[str, Callable[[], dict[str, Any]]] = {
        "trajectory": AgentTrajectory.model_json_schema,
        "event": AgentEvent.model_json_schema,
        "report": DiagnosticReport.model_json_schema,
    }
    click.echo(orjson.dumps(schemas[what](), option=orjson.OPT_INDENT_2).decode())


@cli.command()
def plugins() -> None:
    """List the installed plugins (what each adds, and those broken, with why), and
    the detectors, attributors, importers (with the file suffixes they read),
    recoverers, rerun executors and failure modes."""
    from agentdebug.io.detect import declared_suffixes
    from agentdebug.plugins import BUILTIN, get_registry

    reg = get_registry()  # (what is wrong with a plugin is also logged on stderr)
    click.echo("plugins:")
    for name, where in reg.plugins():
        click.echo(f"  {name} ({where})" if where else f"  {name}")
        if name != BUILTIN:
            for plural, keys in reg.added(name):
                click.echo(f"    adds {plural}: {', '.join(keys)}")
        for problem in (p for p in reg.problems if (p.plugin, p.where) == (name, where)):
            click.echo(f"    {'broken' if problem.broken else 'warning'}: {problem.reason}")

    def importer(name: str) -> str:
        suffixes = declared_suffixes([reg.importers[name]])
        return name + (f" ({', '.join('*' + s for s in suffixes)})" if suffixes else "")

    click.echo("detectors:   " + ", ".join(reg.detectors))
    click.echo("attributors: " + ", ".join(reg.attributors))
    click.echo("importers:   " + ", ".join(importer(name) for name in reg.importers))
    click.echo("recoverers:  " + ", ".join(reg.recoverers))
    click.echo("rerun executors (by framework): " + (", ".join(reg.rerun_executors) or "none"))
    added = [m for m, by in reg.added_by.get("failure_modes", {}).items() if by != BUILTIN]
    more = f"; {len(added)} added by plugins, listed above" if added else ""
    click.echo(f"failure modes: {len(reg.failure_modes)} (see `agentdebug taxonomy`{more})")


@cli.command()
@click.option(
    "--crosswalk",
    type=click.Choice(["mast", "trail", "agentrx"]),
    help="Show one published taxonomy mapped onto ours.",
)
def taxonomy(crosswalk: str | None) -> None:
    """List the failure modes, or map a published taxonomy onto them."""
    from agentdebug.plugins import get_registry
    from agentdebug.taxonomy import TAXONOMIES, modes_for

    modes = list(get_registry().failure_modes.values())
    if crosswalk:
        for name in TAXONOMIES[crosswalk]:
            click.echo(f"{name:<40} -> {', '.join(modes_for(crosswalk, name, modes)) or '(none)'}")
        return
    for mode in modes:
        click.echo(f"{mode.id:<40} {mode.name}")
        click.echo(f"    {mode.definition}")
