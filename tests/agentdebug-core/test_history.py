"""A run that continues another (a resume served by another worker, a retry) is
diagnosed, shown and rerun with the runs before it: the cause of its failure is
often there.

The shipped example run (its root cause is the searcher at step 3, the failure
shows at step 13) is cut in two: a first run that stops after step 6, and a run
that continues it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.capture import RunMark
from agentdebug.capture.auto import diagnose_failure
from agentdebug.diagnose import diagnose
from agentdebug.report import render, render_run
from agentdebug.schema import Outcome
from agentdebug.store.history import HISTORY_LIMIT, earlier_run_of, with_history
from conftest import EXAMPLES, run_cli

CUT = 6  # the first run's last step


@pytest.fixture
def dbg(home: Path) -> Iterator[AgentDebug]:
    debugger = AgentDebug(home)
    yield debugger
    debugger.close()


def example() -> AgentTrajectory:
    return AgentTrajectory.model_validate(
        json.loads((EXAMPLES / "failed_booking.json").read_text())
    )


def cut_in_two(
    dbg: AgentDebug, *, renumbered: bool = False
) -> tuple[AgentTrajectory, AgentTrajectory]:
    """The example as two stored runs, the second continuing the first. With
    ``renumbered``, the second numbers its steps and events from 0, as a plugin
    that does not continue the numbering records it."""
    run = example()
    head = [e for e in run.events if e.step_index <= CUT]
    tail = [e for e in run.events if e.step_index > CUT]
    if renumbered:
        tail = [
            e.model_copy(update={"id": f"e{i}", "step_index": e.step_index - CUT - 1})
            for i, e in enumerate(tail)
        ]
    first = run.model_copy(
        update={
            "id": "booking-1",
            "events": head,
            "outcome": Outcome(status=OutcomeStatus.UNKNOWN, reason="stopped at an interrupt"),
        }
    )
    second = run.model_copy(
        update={"id": "booking-2", "events": tail, "metadata": {"continues": "booking-1"}}
    )
    assert dbg.store is not None
    dbg.store.save_trajectory(first)
    dbg.store.save_trajectory(second)
    return first, dbg.store.load_trajectory("booking-2")


def test_a_continuing_run_is_diagnosed_with_the_run_before_it(dbg: AgentDebug) -> None:
    """Alone, the second run cannot name the searcher's bad call (it is in the
    first run); with its history it does, and says in which run it lies."""
    _, second = cut_in_two(dbg)
    alone = diagnose(second)
    assert alone.root_cause is not None and alone.root_cause.step_index > CUT
    joined = dbg.history(second)
    assert joined.id == "booking-2" and joined.outcome == second.outcome
    assert [e.id for e in joined.events] == [e.id for e in example().events]  # no renaming
    report = diagnose(joined)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 3)
    assert report.trajectory_id == "booking-2"
    assert report.metadata["history"] == ["booking-1", "booking-2"]
    assert "of run booking-1, which this run continues" in report.summary
    assert any("diagnosed together with booking-1 (steps 0-6)" in n for n in report.notes)
    text = render(report, joined)
    assert "failure, 14 events, with the 1 run it continues)" in text
    assert "Root cause: searcher at step 3" in text
    assert "in run booking-1, which this run continues" in text
    assert earlier_run_of(joined, 3) == "booking-1" and earlier_run_of(joined, 13) is None


def test_a_fork_from_before_a_step_keeps_the_run_before_it_up_to_that_step(
    dbg: AgentDebug,
) -> None:
    """A run that forked the other's history (LangGraph's time travel) names the
    step it went on from before; what the other run did from there is not its past."""
    first, second = cut_in_two(dbg)
    assert dbg.store is not None
    fork = second.model_copy(
        update={
            "id": "booking-3",
            "metadata": {"continues": "booking-1", "continues_before_step": 3},
        }
    )
    dbg.store.save_trajectory(fork)
    joined = dbg.history(dbg.store.load_trajectory("booking-3"))
    kept = [e.id for e in first.events if e.step_index < 3]
    assert [e.id for e in joined.events] == kept + [e.id for e in second.events]
    (entry, _) = joined.metadata["joined"]["runs"]
    assert entry["run_id"] == "booking-1" and entry["last_step"] == 2


def test_the_automatic_diagnosis_reads_the_history(dbg: AgentDebug) -> None:
    """What a plugin calls when a run fails: the report it stores and hands on."""
    _, second = cut_in_two(dbg)
    got: list[Any] = []
    report = diagnose_failure(dbg, second, on_report=got.append)
    assert report is not None and got == [report]
    assert report.root_cause is not None and report.root_cause.step_index == 3
    assert dbg.store is not None
    assert dbg.store.load_reports("booking-2")[-1].metadata["history"] == [
        "booking-1",
        "booking-2",
    ]


def test_runs_numbered_apart_are_joined_without_a_clash(dbg: AgentDebug) -> None:
    """A continuing run recorded with its own numbering (steps and event ids from
    0): its steps follow the first run's, the first run's clashing ids are prefixed
    with its run id (parent links too), and the diagnosis still finds step 3."""
    _, second = cut_in_two(dbg, renumbered=True)
    joined = dbg.history(second)
    ids = [e.id for e in joined.events]
    assert len(set(ids)) == len(ids) == len(example().events)
    assert ids[: CUT + 1] == [f"booking-1:e{i}" for i in range(CUT + 1)]  # (all clash)
    assert [e.step_index for e in joined.events] == list(range(14))
    entries = joined.metadata["joined"]["runs"]
    assert entries[1] == {
        "run_id": "booking-2",
        "events": 7,
        "first_step": 7,
        "last_step": 13,
        "status": "failure",
        "step_offset": 7,
    }
    assert entries[0]["renamed_events"] == CUT + 1
    report = diagnose(joined)
    assert report.root_cause is not None and report.root_cause.step_index == 3
    assert report.root_cause.event_id == "booking-1:e3"


def test_parent_links_inside_an_earlier_run_follow_its_renamed_events(dbg: AgentDebug) -> None:
    with dbg.trace("charge", framework="toy") as first:
        start = first.record(EventType.AGENT_START, agent_name="charge", step_index=1)
        first.record(EventType.TOOL_CALL, agent_name="charge", step_index=1, parent_id=start)
    other = dbg.trace("charge", framework="toy", metadata={"continues": first.id})
    with other:  # numbered from 0 again: the ids clash
        other.record(EventType.AGENT_START, agent_name="charge", step_index=1)
        other.record(EventType.AGENT_START, agent_name="charge", step_index=2)
    joined = dbg.history(other.trajectory())
    call = next(e for e in joined.events if e.type is EventType.TOOL_CALL)
    assert call.parent_id == f"{first.id}:{start}" and joined.event(call.parent_id) is not None


def test_a_session_that_continues_a_mark_numbers_on_from_it(dbg: AgentDebug) -> None:
    """``trace(continues=session.mark())`` (live) or ``RunMark.of(stored run)``:
    the link, the goal, steps and event ids on from the run before, so the two
    join as they are."""
    with dbg.trace("refund order A1", framework="toy") as first:
        first.record(EventType.USER_INPUT, step_index=0, input="refund A1")
        first.record(EventType.PLAN, agent_name="planner", step_index=1, output="refund $42")
        mark = first.mark()
    stored = first.trajectory()
    assert RunMark.of(stored)._replace(next_seq=mark.next_seq) == mark
    assert RunMark.of(stored).next_seq <= mark.next_seq
    with dbg.trace(framework="toy", continues=mark) as second:
        second.record(EventType.USER_INPUT, input="approved")  # (numbered on: step 2)
        second.record(EventType.TOOL_RESULT, agent_name="refunds", error="order not found")
    run = second.trajectory()
    assert run.goal == "refund order A1" and run.metadata["continues"] == first.id
    assert [e.step_index for e in run.events] == [2, 3]
    assert not {e.id for e in run.events} & {e.id for e in stored.events}
    joined = dbg.history(run)
    assert [e.step_index for e in joined.events] == [0, 1, 2, 3]
    assert "step_offset" not in joined.metadata["joined"]["runs"][1]
    assert all("renamed_events" not in r for r in joined.metadata["joined"]["runs"])


def test_a_broken_history_is_said_and_the_run_still_diagnosed(dbg: AgentDebug) -> None:
    """The run before was deleted (or lives in another store), two runs name each
    other, the chain is longer than the limit: the history ends there, the
    report says so, the run is diagnosed with what there is."""
    run = example().model_copy(update={"id": "orphan", "metadata": {"continues": "gone"}})
    joined = dbg.history(run)
    assert [e.id for e in joined.events] == [e.id for e in run.events]
    assert (
        "continues run gone, which cannot be read: no run with id 'gone'"
        in (joined.metadata["joined"]["incomplete"])
    )
    report = diagnose(joined)
    assert any("history incomplete: run orphan continues run gone" in n for n in report.notes)

    assert dbg.store is not None
    for name, before in (("a", "b"), ("b", "a")):
        dbg.store.save_trajectory(
            example().model_copy(update={"id": name, "metadata": {"continues": before}})
        )
    looped = dbg.history(dbg.store.load_trajectory("a"))
    assert [r["run_id"] for r in looped.metadata["joined"]["runs"]] == ["b", "a"]
    assert "already in the history" in looped.metadata["joined"]["incomplete"]

    previous = None
    for i in range(HISTORY_LIMIT + 5):
        meta = {"continues": previous} if previous else {}
        one = AgentTrajectory(id=f"link{i}", metadata=meta, events=example().events[:1])
        dbg.store.save_trajectory(one)
        previous = one.id
    long = dbg.history(dbg.store.load_trajectory(previous or ""))
    assert len(long.metadata["joined"]["runs"]) == HISTORY_LIMIT
    assert "cut at 50 runs" in long.metadata["joined"]["incomplete"]


def test_a_run_that_continues_nothing_is_left_as_it_is(dbg: AgentDebug) -> None:
    run = example()
    assert dbg.history(run) is run
    assert with_history(None, run.model_copy(update={"metadata": {"continues": "x"}})).events
    joined = dbg.history(cut_in_two(dbg)[1])
    assert dbg.history(joined) is joined  # (joined once)


def test_the_cli_diagnoses_and_shows_a_run_with_its_history(home: Path) -> None:
    dbg = AgentDebug(home)
    cut_in_two(dbg)
    dbg.close()
    env = {"AGENTDEBUG_HOME": str(home)}
    diagnosed = run_cli("diagnose", "booking-2", env=env)
    assert diagnosed.returncode == 0, diagnosed.stderr
    assert "Root cause: searcher at step 3" in diagnosed.stdout
    assert "in run booking-1, which this run continues" in diagnosed.stdout
    alone = run_cli("diagnose", "booking-2", "--alone", "--no-store", env=env)
    assert alone.returncode == 0, alone.stderr
    assert "searcher at step 3" not in alone.stdout and "booking-1" not in alone.stdout

    shown = run_cli("show", "booking-2", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "continues: booking-1" in shown.stdout
    assert "root cause at step 3, in a run this one continues" in shown.stdout
    assert "[  3]" not in shown.stdout  # (the run's own timeline)
    full = run_cli("show", "booking-2", "--history", env=env)
    assert full.returncode == 0, full.stderr
    assert "[  3]" in full.stdout and "root cause" in full.stdout
    assert "root cause at step 3, in a run" not in full.stdout


@pytest.mark.parametrize("store", ["runs.jsonl", "agentdebug.db"])
def test_history_reads_from_either_store(tmp_path: Path, store: str) -> None:
    dbg = AgentDebug(tmp_path / store)
    try:
        _, second = cut_in_two(dbg)
        assert len(dbg.history(second).events) == len(example().events)
    finally:
        dbg.close()


def test_render_run_shows_a_joined_run_whole(dbg: AgentDebug) -> None:
    _, second = cut_in_two(dbg)
    joined = dbg.history(second)
    text = render_run(joined, reports=[diagnose(joined)])
    assert "continues: booking-1" in text and "events:    14" in text


def toy_in_two(dbg: AgentDebug) -> AgentTrajectory:
    """The toy agent's failing run, recorded as two runs: the plan and the wrong
    search, then (continuing it) the refusal and the wrong answer."""
    from toy_agent import GOAL

    with dbg.trace(GOAL, framework="toy", reference_answer="Canberra") as first:
        first.record(EventType.PLAN, agent_name="planner", step_index=0, output="Find it.")
        first.record(
            EventType.TOOL_CALL,
            agent_name="researcher",
            step_index=1,
            module="city_search",
            input={"tool": "city_search", "query": "largest city of Australia"},
        )
        mark = first.mark()
    second = dbg.trace(framework="toy", reference_answer="Canberra", continues=mark)
    with second as t:
        t.record(
            EventType.TOOL_RESULT,
            agent_name="city_search",
            error="city_search: 'largest city of Australia' is not a capital query",
        )
        t.record(EventType.FINAL_ANSWER, agent_name="writer", output="Sydney")
        t.set_outcome(OutcomeStatus.FAILURE, final_answer="Sydney", reason="wrong city")
    return second.trajectory()


def test_the_closed_loop_reruns_from_a_step_in_the_run_before(dbg: AgentDebug) -> None:
    """The loop reads the run with its history, reruns from the wrong search in
    the first run, and keeps a branch that continues nothing; a report made on
    the run alone (its steps name other events) is not reused but made again."""
    from agentdebug.rerun import closed_loop
    from toy_agent import ToyExecutor

    run = toy_in_two(dbg)
    assert [e.step_index for e in run.events] == [2, 3]
    said: list[str] = []
    executor = ToyExecutor(dbg)
    result = closed_loop(
        run, debugger=dbg, executor=executor, report=diagnose(run), progress=said.append
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert any("read alone; diagnosing it again" in line for line in said)
    (request,) = executor.requests
    assert request.resume_step == 1 and request.trajectory.id == run.id
    assert dbg.store is not None
    branch = dbg.store.load_trajectory(result.attempts[-1].branch_id or "")
    assert branch.parent_id == run.id and branch.outcome.status is OutcomeStatus.SUCCESS
    assert "continues" not in branch.metadata and "joined" not in branch.metadata
    assert [e.type for e in branch.events][:1] == [EventType.PLAN]  # (inherited, run 1)
    assert dbg.history(branch) is branch  # a run of its own


def test_list_says_which_run_a_run_continues(home: Path) -> None:
    dbg = AgentDebug(home)
    cut_in_two(dbg)
    dbg.close()
    env = {"AGENTDEBUG_HOME": str(home)}
    listed = run_cli("list", env=env)
    assert listed.returncode == 0, listed.stderr
    (line,) = [row for row in listed.stdout.splitlines() if row.startswith("booking-2")]
    assert "[continues booking-1]" in line
    as_json = run_cli("list", "--json", env=env)
    rows = [json.loads(row) for row in as_json.stdout.splitlines()]
    assert {r["id"]: r["continues"] for r in rows} == {"booking-1": None, "booking-2": "booking-1"}
