"""The closed loop with a real rerun executor: branches in the store, verification
on the report, refusals, failing and broken reruns, scorers, the diff (the CLI:
test_loop_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.llm import LLMSettings, use_settings
from agentdebug.llm.testing import ScriptedServer
from agentdebug.report import verification_line
from agentdebug.rerun import (
    CallableScorer,
    LLMJudgeScorer,
    OutcomeScorer,
    ReferenceScorer,
    branch_debugger,
    closed_loop,
    compare,
    find_executor,
    load_executor,
    start_branch,
)
from agentdebug.rerun.executors import parse_options
from agentdebug.rerun.record import carried_verification
from agentdebug.schema import AgentTrajectory, OutcomeStatus, RecoveryPlan, RerunRequest
from agentdebug.store import RunQuery
from toy_agent import ToyExecutor, failing_run


@pytest.fixture
def dbg(tmp_path: Path) -> AgentDebug:
    return AgentDebug(tmp_path / "store")


def test_a_later_diagnosis_keeps_the_verification_only_for_the_same_root_cause(
    dbg: AgentDebug,
) -> None:
    run = failing_run(dbg)
    assert closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg)).verified_by_rerun
    store = dbg.store
    assert store is not None
    (verified,) = store.load_reports(run.id)
    assert verified.root_cause is not None

    same = dbg.diagnose(run)
    assert same.id != verified.id and same.verified_by_rerun is True
    assert same.verification == verified.verification
    assert store.load_reports(run.id)[-1].verification == verified.verification

    # a report that blames another step: the rerun tested nothing it says
    elsewhere = verified.root_cause.model_copy(update={"step_index": 2})
    other = same.model_copy(
        update={
            "id": "another-report",
            "hypotheses": [elsewhere],
            "verification": None,
            "verified_by_rerun": None,
            "notes": [],
        }
    )
    assert carried_verification(store, other) == other

    # the same agent and step read another way (the run with the runs it continues:
    # other steps under the same numbers) says nothing the rerun tested either
    read_with = same.model_copy(
        update={
            "id": "read-with-history",
            "verification": None,
            "verified_by_rerun": None,
            "notes": [],
            "metadata": {**same.metadata, "history": ["earlier-run", run.id]},
        }
    )
    assert carried_verification(store, read_with) == read_with


def test_a_successful_rerun_verifies_the_root_cause(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    executor = ToyExecutor(dbg)
    result = closed_loop(run, debugger=dbg, executor=executor)

    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert len(result.attempts) == 1
    attempt = result.attempts[0]
    assert attempt.plan is not None and attempt.plan.resume_step == 1
    assert attempt.decision is not None and attempt.decision.approved
    request = executor.requests[0]
    assert request.resume_step == 1 and request.directive == attempt.plan.directive

    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.final_run_id or "")
    assert branch.parent_id == run.id and branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["branch"]["resume_step"] == 1
    assert branch.metadata["branch"]["directive"] == attempt.plan.directive
    assert branch.branch_from_event_id == run.events[1].id
    # the inherited prefix: step 0 copied with its id, marked
    assert branch.events[0].id == run.events[0].id
    assert branch.events[0].metadata["inherited_from"] == run.id
    assert [e.step_index for e in branch.events] == [0, 1, 2, 3]

    (report,) = store.load_reports(run.id)
    assert report.verified_by_rerun is True
    assert report.verification is not None and report.verification.branch_id == branch.id
    recovery = report.metadata["recovery"]
    assert recovery[0]["decision"]["approved"] is True and recovery[0]["branch_id"] == branch.id
    # the original is untouched
    assert store.load_trajectory(run.id).outcome.status is OutcomeStatus.FAILURE


def test_a_branch_that_fails_again_goes_round_until_the_limit(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg, "stubborn"), max_rounds=2)
    assert result.status == "failed" and result.verified_by_rerun is False
    first, second = result.attempts
    assert second.run_id == first.branch_id  # round 2 diagnosed the first branch
    store = dbg.store
    assert store is not None
    branch2 = store.load_trajectory(second.branch_id or "")
    assert branch2.parent_id == first.branch_id
    (report,) = store.load_reports(run.id)
    assert report.verified_by_rerun is False
    assert report.verification is not None and report.verification.status == "not_confirmed"
    assert store.load_reports(first.branch_id or "")  # the branch got its own diagnosis
    assert len(store.list_runs()) == 3  # the failure and both repairs are kept
    # the branch failed as the original did, so the recoverer planned the same again:
    # round 2 is told that this was tried and how it failed, not the same words again
    assert first.plan is not None and second.plan is not None
    assert second.plan.directive.startswith(first.plan.directive)
    assert "This was already tried from this step (round 1) and the run still failed" in (
        second.plan.directive
    )
    assert first.score is not None and first.score.reason.rstrip(".") in second.plan.directive
    assert any("round 1 tried this very plan" in n for n in second.plan.notes)


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_every_round_of_a_loop_is_a_rerun_of_the_original(tmp_path: Path, kind: str) -> None:
    """Round 3 reruns round 2's branch, which reruns round 1's: each knows the
    whole line back to the original, the store lists them all as its reruns, and
    a diff of the original and the last round says how they are linked."""
    dbg = AgentDebug(tmp_path / ("runs.jsonl" if kind == "jsonl" else "store"))
    run = failing_run(dbg)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg, "stubborn"), max_rounds=3)
    ids = [a.branch_id for a in result.attempts]
    store = dbg.store
    assert store is not None and len(ids) == 3
    said = [a.plan.directive for a in result.attempts if a.plan is not None]
    assert len(set(said)) == 3 and "(round 1, 2)" in said[2]  # never the same words twice
    last = store.load_trajectory(ids[2] or "")
    assert last.metadata["branch"]["lineage"] == [run.id, ids[0], ids[1]]
    below = store.list_runs(RunQuery(descends_from=run.id, limit=None))
    assert sorted(r.id for r in below) == sorted(ids)  # type: ignore[type-var]
    assert [r.id for r in store.list_runs(RunQuery(parent_id=run.id))] == [ids[0]]
    assert compare(run, last).related == (
        f"{last.id} descends from {run.id} (a branch of a branch, 3 reruns down)"
    )
    assert compare(store.load_trajectory(ids[0] or ""), last).related.startswith(
        f"{last.id} descends from {ids[0]}"
    )


def test_an_executor_that_raises_is_reported_and_the_original_kept(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg, "broken"))
    assert result.status == "error"
    assert "RuntimeError: the sandbox is gone" in result.detail
    assert result.attempts[0].branch_id is None
    assert result.verified_by_rerun is None  # nothing ran, so nothing was tested
    store = dbg.store
    assert store is not None
    assert [r.id for r in store.list_runs()] == [run.id]
    (report,) = store.load_reports(run.id)
    assert report.verification is None
    assert "the sandbox is gone" in report.metadata["recovery"][0]["error"]


def test_a_rerun_that_cannot_run_leaves_an_earlier_verification(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    assert closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg)).verified_by_rerun
    store = dbg.store
    assert store is not None
    (report,) = store.load_reports(run.id)
    again = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg, "broken"), report=report)
    assert again.status == "error"
    (report,) = store.load_reports(run.id)
    assert report.verified_by_rerun is True
    assert report.verification is not None and report.verification.status == "verified_by_rerun"
    assert [a["error"] is None for a in report.metadata["recovery"]] == [True, False]


def test_the_loop_on_a_jsonl_store_keeps_one_report_with_everything(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path / "runs.jsonl")
    run = failing_run(dbg)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg))
    assert result.status == "succeeded"
    store = dbg.store
    assert store is not None
    (report,) = store.load_reports(run.id)  # saved three times, one version kept
    assert report.verified_by_rerun is True and len(report.metadata["recovery"]) == 1
    dbg.close()
    reopened = AgentDebug(tmp_path / "runs.jsonl").store
    assert reopened is not None
    (reread,) = reopened.load_reports(run.id)
    assert reread.verification is not None and reread.metadata["recovery"]


def test_a_scorer_that_raises_is_an_error_attempt_with_the_branch_kept(dbg: AgentDebug) -> None:
    run = failing_run(dbg)

    def picky(branch: AgentTrajectory) -> bool:
        if branch.parent_id:
            raise KeyError("score_field")
        return False

    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), scorer=picky)
    assert result.status == "error" and "KeyError: 'score_field'" in result.detail
    attempt = result.attempts[0]
    assert attempt.branch_id is not None and attempt.error is not None
    store = dbg.store
    assert store is not None
    assert store.load_trajectory(attempt.branch_id).parent_id == run.id
    (report,) = store.load_reports(run.id)
    assert report.metadata["recovery"][0]["branch_id"] == attempt.branch_id

    def broken(branch: AgentTrajectory) -> bool:
        raise ValueError("no")

    with pytest.raises(AgentDebugError, match=r"cannot judge run .*ValueError: no"):
        closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), scorer=broken)
    # with no executor for its framework either, that comes first: a scorer that
    # worked would only lead to it
    elsewhere = run.model_copy(update={"id": "elsewhere", "framework": "nowhere"})
    with pytest.raises(AgentDebugError) as raised:
        closed_loop(elsewhere, debugger=dbg, scorer=broken)
    assert str(raised.value).startswith(
        "run 'elsewhere' cannot be rerun: no rerun executor for framework 'nowhere'"
    )
    assert str(raised.value).endswith("scorer cannot judge run 'elsewhere': ValueError: no")
    assert "; and the " in str(raised.value)


def test_a_recoverer_without_a_resume_step_ends_with_no_plan(dbg: AgentDebug) -> None:
    run = failing_run(dbg)

    class Vague:
        name = "vague"

        def recover(self, trajectory: AgentTrajectory, report: Any) -> RecoveryPlan:
            return RecoveryPlan(strategy="vague", directive="Try harder.", resume_step=None)

    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), recoverer=Vague())
    assert result.status == "no_plan"
    assert result.detail == "recoverer 'vague' named no step to rerun from"


def test_a_root_cause_in_the_runs_input_ends_with_no_plan_and_no_rerun(dbg: AgentDebug) -> None:
    from agentdebug import EventType
    from agentdebug.schema import AgentEvent, ErrorInfo, Outcome

    run = AgentTrajectory(
        id="refused-input",
        goal="count",
        framework="toy",
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="the graph raised ValidationError"),
        events=[
            AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input={"count": "x"}),
            AgentEvent(
                id="e1",
                type=EventType.ERROR,
                step_index=0,
                parent_id="e0",
                error=ErrorInfo(message="1 validation error for State count"),
                metadata={"failure_mode": "system.schema_violation"},
            ),
        ],
    )
    executor = ToyExecutor(dbg)
    result = closed_loop(run, debugger=dbg, executor=executor)
    assert result.status == "no_plan"
    assert result.detail is not None
    assert result.detail.startswith("the root cause is the input of run 'refused-input' (step 0)")
    assert [a.branch_id for a in result.attempts] == [None]  # nothing was rerun


def test_policy_never_refuses_and_records_the_decision(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    executor = ToyExecutor(dbg)
    result = closed_loop(run, debugger=dbg, executor=executor, policy="never")
    assert result.status == "refused" and executor.requests == []
    assert result.verified_by_rerun is None
    store = dbg.store
    assert store is not None
    (report,) = store.load_reports(run.id)
    assert report.metadata["recovery"][0]["decision"]["approved"] is False
    assert report.verification is None


def test_a_run_that_passes_needs_no_loop(dbg: AgentDebug) -> None:
    run = failing_run(dbg).model_copy(update={"reference_answer": "Sydney"})
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), scorer="reference")
    assert result.status == "already_ok" and result.attempts == []
    # nor an executor: none is installed for a run of another framework
    other = run.model_copy(update={"framework": "hand-written"})
    assert closed_loop(other, debugger=dbg, scorer="reference").status == "already_ok"


def test_the_runs_own_verdict_outweighs_a_matching_reference(dbg: AgentDebug) -> None:
    # the success check said failure although the answer contains the reference phrase
    run = failing_run(dbg).model_copy(update={"reference_answer": "Sydney"})
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg))
    assert result.status == "succeeded"  # the loop ran: the recorded failure counts
    assert result.attempts[0].score is not None
    assert result.attempts[0].score.scorer == "outcome"


def test_callable_policy_and_scorer(dbg: AgentDebug) -> None:
    run = failing_run(dbg, reference=False)
    seen: list[int | None] = []

    def approve(plan: Any) -> bool:
        seen.append(plan.resume_step)
        return True

    result = closed_loop(
        run,
        debugger=dbg,
        executor=ToyExecutor(dbg),
        policy=approve,
        scorer=lambda branch: "Canberra" in str(branch.outcome.final_answer),
    )
    assert seen == [1] and result.status == "succeeded"
    assert result.attempts[0].score is not None
    assert result.attempts[0].score.scorer.startswith("callable:")


def test_loop_arguments_are_checked(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    with pytest.raises(AgentDebugError, match="max_rounds must be at least 1"):
        closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), max_rounds=0)
    with pytest.raises(NotFoundError, match="no rerun executor for framework 'toy'") as caught:
        closed_loop(run, debugger=dbg)
    assert "installed: none" not in str(caught.value)  # (before: "installed: none installed")
    with pytest.raises(NotFoundError, match="unknown recoverer 'magic'"):
        closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg), recoverer="magic")


def test_a_missing_plugin_is_named_by_its_distribution() -> None:
    """The core's environment has no ReAct plugin: the error says which to install."""
    from agentdebug.rerun.executors import find_executor

    with pytest.raises(NotFoundError) as caught:
        find_executor("react")
    assert "install agentdebug-react" in str(caught.value)
    assert "pip install ./packages/agentdebug-react" in str(caught.value)  # (not on PyPI)
    assert "python3 dev.py run agentdebug-react -m agentdebug" in str(caught.value)


# -- scorers --------------------------------------------------------------------------------


def _with_answer(run: AgentTrajectory, answer: str, reference: str | None) -> AgentTrajectory:
    outcome = run.outcome.model_copy(update={"final_answer": answer})
    return run.model_copy(update={"outcome": outcome, "reference_answer": reference})


def test_reference_scorer_matches_phrases_not_substrings(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    score = ReferenceScorer().score
    assert score(_with_answer(run, "The capital is Canberra.", "canberra"), run).success
    assert score(_with_answer(run, "About 1,234,567 people", "1234567"), run).success
    miss = score(_with_answer(run, "Canberra-ish", "New Canberra"), run)
    assert not miss.success and 0 < miss.score < 1
    assert not score(_with_answer(run, "Canberrans", "Canberra"), run).success
    assert not score(_with_answer(run, "It changed by 5 points", "-5"), run).success
    assert score(_with_answer(run, "It changed by -5 points", "-5"), run).success
    assert not score(_with_answer(run, "Growth was 3.5", "3.5%"), run).success
    assert score(_with_answer(run, "well-known: 3.5%", "3.5%"), run).success
    with pytest.raises(AgentDebugError, match="has no reference answer"):
        score(_with_answer(run, "x", None), _with_answer(run, "x", None))


def test_outcome_and_callable_scorers(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    assert not OutcomeScorer().score(run, run).success
    assert CallableScorer(lambda b: 0.75).score(run, run).success
    with pytest.raises(AgentDebugError, match="returned 'yes'"):
        CallableScorer(lambda b: "yes").score(run, run)


def test_llm_judge_scorer_through_the_server(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    verdict = {"success": False, "score": 0.1, "reason": "Sydney is not the capital."}
    settings = LLMSettings(model="m", base_url="", api_key="k", cache=False, max_retries=0)
    with (
        ScriptedServer([json.dumps(verdict)]) as server,
        use_settings(settings.model_copy(update={"base_url": server.base_url})),
    ):
        score = LLMJudgeScorer().score(run, run)
        sent = "\n".join(m["content"] for m in server.requests[0]["messages"])
    assert not score.success and score.reason == "Sydney is not the capital."
    assert "Final answer: Sydney" in sent and "Reference answer: Canberra" in sent
    assert score.audit and score.audit[0].stage == "llm"


# -- diff -------------------------------------------------------------------------------------


def test_diff_shows_the_first_divergence_at_the_resume_step(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg))
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.final_run_id or "")
    diff = compare(run, branch)
    assert diff.shared_prefix == 1
    first = diff.first_divergence
    assert first is not None and first.a is not None and first.b is not None
    assert first.a.step_index == first.b.step_index == 1
    text = diff.render()
    assert f"{branch.id} is a branch of {run.id}" in text
    assert "outcome failure  final answer: Sydney" in text
    assert "outcome success  final answer: Canberra" in text
    assert "First divergence: A step 1 / B step 1." in text
    assert compare(run, run).first_divergence is None
    silent = run.model_copy(
        update={
            "id": "no-answer",
            "outcome": run.outcome.model_copy(update={"final_answer": None}),
            "events": [e for e in run.events if e.type is not EventType.FINAL_ANSWER],
        }
    )
    assert "outcome failure  no final answer" in compare(silent, branch).render()  # (not "None")


# -- executors --------------------------------------------------------------------------------


def test_load_executor_errors_are_clear() -> None:
    with pytest.raises(AgentDebugError, match="expected module:factory"):
        load_executor("toy_agent")
    with pytest.raises(AgentDebugError, match="cannot import no_such_module"):
        load_executor("no_such_module:make")
    with pytest.raises(AgentDebugError, match="importing broken_module failed: RuntimeError"):
        load_executor("broken_module:make")
    with pytest.raises(AgentDebugError, match="toy_agent has no 'nope'"):
        load_executor("toy_agent:nope")
    with pytest.raises(AgentDebugError, match="returned str, which has no 'framework'"):
        load_executor("toy_agent:GOAL")
    assert load_executor("toy_agent:make_executor").framework == "toy"
    with pytest.raises(NotFoundError, match="install the framework's agentdebug plugin"):
        find_executor("nothing")


def test_executor_options_reach_the_factory_and_bad_ones_are_named() -> None:
    """``--executor-option KEY=VALUE``: keyword arguments of the factory."""
    assert load_executor("toy_agent:ToyExecutor", mode="stubborn").mode == "stubborn"
    with pytest.raises(AgentDebugError, match=r"does not take the options given \(mode\)"):
        load_executor("toy_agent:make_executor", mode="stubborn")
    with pytest.raises(AgentDebugError, match="is an object, not a factory, so it takes no"):
        load_executor("toy_agent:GOAL", mode="stubborn")
    assert parse_options(["mode=a=b", " isolate =", "k=v"]) == {
        "mode": "a=b",
        "isolate": "",
        "k": "v",
    }
    with pytest.raises(AgentDebugError, match="executor option 'mode' given twice"):
        parse_options(["mode=a", "mode=b"])
    with pytest.raises(AgentDebugError, match="executor option '=x': expected KEY=VALUE"):
        parse_options(["=x"])


# -- CLI ----------------------------------------------------------------------------------------


def test_native_uses_deepdebugs_own_fix(dbg: AgentDebug) -> None:
    from agentdebug.recover import NativeRecoverer
    from agentdebug.schema import DiagnosticReport, Fix, Hypothesis

    run = failing_run(dbg)
    report = DiagnosticReport(
        id="r1",
        trajectory_id=run.id,
        tier="model",
        hypotheses=[
            Hypothesis(agent_name="researcher", step_index=1, strategy="deepdebug", confidence=0.8)
        ],
        fix=Fix(
            directive="Query city_search for the capital, not the largest city.", target_step=1
        ),
    )
    plan = NativeRecoverer().recover(run, report)
    assert plan.directive == "Query city_search for the capital, not the largest city."
    assert plan.rationale == "directive taken from the diagnosis's own fix" and plan.cost.calls == 0


class LeakyExecutor(ToyExecutor):
    """The directive reaches a later agent too (a shared message list): the
    researcher searches as before, and the writer, told to fix the run, answers
    right anyway. The branch passes; the blamed step did not change."""

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        dbg = self.dbg or branch_debugger(request)
        with start_branch(dbg, request, framework="toy") as t:
            t.record(
                EventType.TOOL_CALL,
                agent_name="researcher",
                step_index=1,
                module="city_search",
                input={"tool": "city_search", "query": "largest city of Australia"},
            )
            t.record(EventType.FINAL_ANSWER, agent_name="writer", step_index=3, output="Canberra")
            t.set_outcome(OutcomeStatus.SUCCESS, final_answer="Canberra")
        return t.trajectory()


def test_a_branch_that_passes_with_the_blamed_step_unchanged_does_not_verify_it(
    dbg: AgentDebug,
) -> None:
    run = failing_run(dbg)
    said: list[str] = []
    result = closed_loop(run, debugger=dbg, executor=LeakyExecutor(dbg), progress=said.append)
    assert result.status == "succeeded"  # the branch passed...
    assert result.verified_by_rerun is False  # ...but says nothing of the blamed step
    assert "the blamed step decided as before" in result.detail
    store = dbg.store
    assert store is not None
    (report,) = store.load_reports(run.id)
    assert report.verified_by_rerun is False and report.verification is not None
    assert report.verification.status == "not_confirmed"
    assert "researcher at step 1 decided as before" in report.verification.detail
    assert any("decided as before" in line for line in said)
    line = verification_line(report) or ""  # (not "did not succeed", as a failed one)
    assert f"branch {result.final_run_id} passed, but researcher at step 1 decided" in line
    assert "did not succeed" not in line


def test_a_later_rounds_success_is_told_on_the_originals_report(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    result = closed_loop(
        run, debugger=dbg, executor=ToyExecutor(dbg, mode="second_time"), max_rounds=3
    )
    assert result.status == "succeeded" and result.verified_by_rerun is False
    first, second = result.attempts
    store = dbg.store
    assert store is not None
    (report,) = store.load_reports(run.id)
    v = report.verification
    assert v is not None and v.status == "not_confirmed"  # round 1's test of its blame
    assert f"round 2's branch {second.branch_id}, which corrected researcher at step 1" in v.detail
    assert f"of run {first.branch_id}, succeeded" in v.detail


def test_a_diff_names_the_tool_of_a_call_as_show_does() -> None:
    """A call whose tool is named in its metadata (the shipped example's, the
    importers') reads ``tool(arguments)`` in a diff too (before: arguments alone)."""
    from agentdebug.rerun.diff import brief
    from agentdebug.schema import AgentEvent

    call = AgentEvent(
        id="e1",
        type=EventType.TOOL_CALL,
        step_index=3,
        agent_name="searcher",
        input={"date": "14/12/2026"},
        metadata={"tool_name": "search_fares"},
    )
    assert 'searcher: search_fares({"date":"14/12/2026"})' in brief(call)
