"""A run begun inside another (a sub-agent's loop, an inner trace) is its sub-run:
named as within it, not as a branch, and how it went is recorded in the outer run."""

from __future__ import annotations

from pathlib import Path

from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.diagnose import diagnose
from agentdebug.store import open_store


def test_a_failed_sub_run_is_an_error_of_its_agent_in_the_outer_run(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="Plan a trip") as outer:
        outer.record(EventType.HANDOFF, agent_name="planner", output="booker: book UA1")
        with dbg.trace(goal="book UA1") as inner:
            inner.record(EventType.TOOL_CALL, agent_name="booker", input={"flight": "UA1"})
            inner.record(EventType.TOOL_RESULT, agent_name="booker", error="sold out")
            inner.set_outcome("failure", reason="no seat was booked")
        outer.record(EventType.FINAL_ANSWER, agent_name="planner", output="Flight booked!")
    store = open_store(home)
    sub = store.load_trajectory(inner.id)
    assert sub.metadata["within_run"] == outer.id
    assert sub.parent_id is None  # a sub-run, not a rerun's branch
    run = store.load_trajectory(outer.id)
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.agent_name == "booker" and error.metadata["sub_run"] == inner.id
    assert "no seat was booked" in (error.error.message if error.error else "")
    # The outer run's answer over its sub-run's failure is questioned, and booker
    # is an agent of the run (before: "All done" unquestioned, booker never seen).
    report = diagnose(run)
    modes = {f.mode_id for f in report.findings}
    assert "verification.premature_success" in modes
    assert report.root_cause is not None and report.root_cause.agent_name == "booker"
    (failed,) = [f for f in report.findings if f.agent_name == "booker"]
    assert f"booker's run {inner.id} failed" in failed.message  # (not "raised": it declared)


def test_a_sub_run_that_answered_is_its_agents_answer_in_the_outer_run(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="Plan a trip") as outer:
        with dbg.trace(goal="weather in Paris") as inner:
            inner.record(EventType.FINAL_ANSWER, agent_name="forecaster", output="sunny, 22C")
    run = open_store(home).load_trajectory(outer.id)
    (end,) = run.events
    assert end.type is EventType.OBSERVATION and end.agent_name == "forecaster"
    assert end.output == "sunny, 22C" and end.metadata["sub_run"] == inner.id


def test_a_branch_and_a_run_outliving_its_outer_run_are_left_alone(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="the original") as original:
        original.record(EventType.MESSAGE, agent_name="a", output="hi")
    with dbg.trace(goal="outer") as outer:
        branch = dbg.trace(goal="a rerun", parent_id=original.id)
        late = dbg.trace(goal="ends after the outer run")
        with branch:
            branch.record(EventType.MESSAGE, agent_name="a", output="again")
    with late:
        late.record(EventType.MESSAGE, agent_name="b", output="later")
    store = open_store(home)
    assert "within_run" not in store.load_trajectory(branch.id).metadata
    assert store.load_trajectory(late.id).metadata["within_run"] == outer.id
    outer_run = store.load_trajectory(outer.id)
    assert outer_run.events == []  # nothing of the branch, nor of the run that ended later
    assert outer_run.outcome.status is not OutcomeStatus.FAILURE


def test_show_names_the_run_a_sub_run_is_within(home: Path) -> None:
    from agentdebug.report import render_run

    dbg = AgentDebug()
    with dbg.trace(goal="outer") as outer, dbg.trace(goal="inner") as inner:
        inner.record(EventType.MESSAGE, agent_name="helper", output="done")
    shown = render_run(open_store(home).load_trajectory(inner.id))
    assert f"within:    {outer.id}" in shown


def test_list_says_which_run_a_sub_run_is_within(home: Path) -> None:
    from conftest import run_cli

    dbg = AgentDebug()
    with dbg.trace(goal="outer") as outer, dbg.trace(goal="book a flight") as inner:
        inner.record(EventType.MESSAGE, agent_name="booker", output="done")
    dbg.close()
    listed = run_cli("list").stdout
    (line,) = [line for line in listed.splitlines() if line.startswith(inner.id)]
    assert f"[within {outer.id}] book a flight" in line


def test_a_sub_agent_that_failed_then_succeeded_is_resolved(home: Path) -> None:
    """An orchestrator calls its booker again after a failure, and the retry books:
    the outer run's correct answer is not questioned over the first failure, nor
    over a helper that got past its own error and answered nothing."""
    dbg = AgentDebug()
    with dbg.trace(goal="book UA1") as outer:
        for attempt, (result, ok) in enumerate([("sold out", False), ("booked", True)]):
            with dbg.trace(goal=f"attempt {attempt}") as inner:
                inner.record(EventType.TOOL_RESULT, agent_name="booker", output=result)
                inner.set_outcome("success" if ok else "failure", reason=result)
        with dbg.trace(goal="look up the fare") as helper:
            helper.record(EventType.TOOL_RESULT, agent_name="searcher", error="timeout")
            helper.record(EventType.TOOL_RESULT, agent_name="searcher", output="$120")
        outer.record(EventType.FINAL_ANSWER, agent_name="planner", output="Booked UA1.")
        outer.set_outcome("success", final_answer="Booked UA1.")
    run = open_store(home).load_trajectory(outer.id)
    kinds = [(e.type, e.agent_name) for e in run.events]
    assert kinds[:3] == [
        (EventType.ERROR, "booker"),
        (EventType.OBSERVATION, "booker"),
        (EventType.OBSERVATION, "searcher"),  # an inferred failure is not an error here
    ]
    report = diagnose(run)
    assert "verification.premature_success" not in {f.mode_id for f in report.findings}
    assert report.root_cause is None  # booker's failure was resolved by its retry


def test_the_sub_agent_whose_failure_was_ignored_is_blamed_not_one_retried(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="write a report") as outer:
        for ok in (False, True):  # the writer fails, is called again, and writes
            with dbg.trace(goal="draft") as writer:
                writer.record(EventType.FINAL_ANSWER, agent_name="writer", output="a draft")
                writer.set_outcome("success" if ok else "failure", reason="draft rejected")
        with dbg.trace(goal="research") as researcher:
            researcher.record(EventType.FINAL_ANSWER, agent_name="researcher", output="Lyon")
            researcher.set_outcome("failure", reason="the answer failed the success check")
        outer.record(EventType.FINAL_ANSWER, agent_name="orchestrator", output="All done")
    report = diagnose(open_store(home).load_trajectory(outer.id))
    assert report.root_cause is not None
    assert report.root_cause.agent_name == "researcher"  # before: the retried writer
    (writer_error,) = [f for f in report.findings if f.agent_name == "writer"]
    assert "resolved: writer's run" in writer_error.message


def test_a_sub_run_ending_with_a_json_lines_store_reads_nothing_back(tmp_path: Path) -> None:
    """The agent a sub-run stands for is known without reading the store (a JSON
    Lines store is read whole, which a recording process otherwise never does)."""
    dbg = AgentDebug(tmp_path / "runs.jsonl")
    with dbg.trace(goal="outer") as outer, dbg.trace(goal="inner") as inner:
        inner.record(EventType.FINAL_ANSWER, agent_name="writer", output="done")
    store = dbg.store
    assert store is not None and not getattr(store, "_runs", None)  # nothing read
    dbg.close()
    (event,) = open_store(tmp_path / "runs.jsonl").load_trajectory(outer.id).events
    assert event.agent_name == "writer" and event.metadata["sub_run"] == inner.id


def _orchestrate(dbg: AgentDebug, *, answer_as_event: bool) -> tuple[str, str]:
    """An orchestrator calls its writer, whose run fails ("no sources found"), and
    still answers "All done": as a final-answer event, or only through set_outcome."""
    with dbg.trace(goal="write the report") as outer:
        outer.record(EventType.HANDOFF, agent_name="orchestrator", output="writer: write it")
        with dbg.trace(goal="draft the report") as writer:
            writer.record(EventType.TOOL_CALL, agent_name="writer", input={"q": "sources"})
            writer.set_outcome("failure", reason="no sources found")
        if answer_as_event:
            outer.record(EventType.FINAL_ANSWER, agent_name="orchestrator", output="All done")
        outer.set_outcome("success", final_answer="All done")
    return outer.id, writer.id


def test_an_answer_given_only_to_set_outcome_is_questioned_like_a_recorded_one(
    home: Path,
) -> None:
    """Before, "All done" given only to set_outcome went unquestioned over the
    writer's failed run, while the same answer as a final_answer event was premature
    success."""
    dbg = AgentDebug()
    store = open_store(home)
    seen = {}
    for as_event in (True, False):
        run_id, _ = _orchestrate(dbg, answer_as_event=as_event)
        run = store.load_trajectory(run_id)
        report = diagnose(run)
        (claim,) = [f for f in report.findings if f.mode_id == "verification.premature_success"]
        (answer,) = [e for e in run.events if e.type is EventType.FINAL_ANSWER]
        assert answer.output == "All done" and claim.event_id == answer.id
        assert report.root_cause is not None and report.root_cause.agent_name == "writer"
        seen[as_event] = sorted(f.mode_id for f in report.findings)
    assert seen[True] == seen[False]
    # recorded once, when the run recorded no final answer of its own
    (given,) = [e for e in run.events if e.type is EventType.FINAL_ANSWER]
    assert given.agent_name is None  # (the run declared no agent of its own)
    assert given.metadata["by_the_run"] == "the final answer given to set_outcome"


def test_a_declared_sub_run_failure_reads_as_the_sub_agents_failed_task(home: Path) -> None:
    """Before: a tool or runtime error, "writer's run X failed: writer's run X: no
    sources found", blamed on the orchestrator's handoff as much as on the writer."""
    from agentdebug.report import render_text

    dbg = AgentDebug()
    run_id, writer_id = _orchestrate(dbg, answer_as_event=False)
    run = open_store(home).load_trajectory(run_id)
    report = diagnose(run)
    (failed,) = [f for f in report.findings if f.agent_name == "writer"]
    assert failed.mode_id == "coordination.delegated_task_failed"
    assert failed.message == f"writer's run {writer_id} failed: no sources found"
    root = report.root_cause
    assert root is not None and (root.agent_name, root.mode_id) == (
        "writer",
        "coordination.delegated_task_failed",
    )
    text = render_text(report, run)
    assert "Root cause: writer at step 1 — Delegated task failed" in text
    assert f"why: writer's run {writer_id} failed: no sources found" in text
    assert f"✗ run {writer_id} failed: no sources found" in text  # (its step, as shown)
    assert "premature_success" in text  # the outer answer over it is still questioned


def test_a_sub_run_that_raised_says_what_it_raised(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="write the report") as outer:
        try:
            with dbg.trace(goal="draft", agents=["writer"]) as writer:
                raise ValueError("the template is missing")
        except ValueError:
            pass
        try:
            with dbg.trace(goal="look up", agents=["searcher"]) as searcher:
                raise TimeoutError("search timed out after 30 s")
        except TimeoutError:
            pass
    report = diagnose(open_store(home).load_trajectory(outer.id))
    by_agent = {f.agent_name: f for f in report.findings}
    assert by_agent["writer"].mode_id == "coordination.delegated_task_failed"
    assert by_agent["writer"].message == (
        f"writer's run {writer.id} failed: ValueError: the template is missing"
    )
    assert by_agent["searcher"].mode_id == "system.timeout"  # (what it raised says more)
    assert by_agent["searcher"].message.startswith(f"searcher's run {searcher.id} failed:")
