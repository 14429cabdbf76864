"""A tool whose own code crashed on what the user wrote, word for word: the tool's
step is blamed, not the model that passed it on (a review's user saw the model
blamed, and a rerun that had it pass "123" instead "verified" the wrong blame)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, ErrorInfo, EventType, Outcome, OutcomeStatus
from conftest import ev, run_cli, traj

ASK = "How many units of SKU-123 do we have in stock?"


def stock_run(sku: str, error: ErrorInfo, ask: str = ASK) -> AgentTrajectory:
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "get_stock", "args": {"sku": sku}}]}  # fmt: skip
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=ask),
        ev(
            1,
            EventType.LLM_RESPONSE,
            "agent",
            input=[{"role": "user", "content": ask}],
            output=call,
        ),
        ev(
            2,
            EventType.TOOL_CALL,
            "agent",
            parent_id="e1",
            input={"sku": sku},
            metadata={"tool_name": "get_stock", "tool_call_id": "c1"},
        ),
        ev(
            3,
            EventType.TOOL_RESULT,
            "tools",
            parent_id="e2",
            error=error,
            metadata={"tool_name": "get_stock", "tool_call_id": "c1"},
        ),
    )
    return run.model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="no stock count")}
    )


CRASH = ErrorInfo(type="ValueError", message="invalid literal for int() with base 10: 'SKU-123'")


def test_a_tool_that_crashed_on_the_user_s_own_words_is_blamed_with_a_code_fix() -> None:
    report = diagnose(stock_run("SKU-123", CRASH))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tools", 3)
    assert "own code raised on the task's own arguments" in root.rationale
    assert report.fix is not None
    assert "Fix the tool's code" in report.fix.directive and "SKU-123" in report.fix.directive


@pytest.mark.parametrize(
    ("sku", "error"),
    [
        # the tool's own message to its caller: the call is to change
        ("SKU-123", ErrorInfo(type="ValueError", message="sku must be digits, e.g. 123")),
        # arguments the model made up, not the user's: as before, the call
        ("SKU-999", ErrorInfo(type="ValueError", message="invalid literal for int(): 'SKU-999'")),
        # a key not found may be the record missing, not a bug
        ("SKU-123", ErrorInfo(type="KeyError", message="'SKU-123'")),
        # a tool's own message worded as Python's, telling its caller what to pass
        (
            "SKU-123",
            ErrorInfo(
                type="ValueError",
                message="invalid literal for int(): "
                "'SKU-123'; pass the numeric part only, e.g. '123'",
            ),
        ),
        # a word of the task the model passed where another was wanted (the name,
        # not the order number; "many" where a count was to be worked out)
        ("units", CRASH),
        ("many", ErrorInfo(type="ValueError", message="invalid literal for int(): 'many'")),
    ],
)
def test_otherwise_the_call_that_failed_is_blamed(sku: str, error: ErrorInfo) -> None:
    root = diagnose(stock_run(sku, error)).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 2)


def test_a_division_by_the_zero_the_user_asked_for_is_the_caller_s() -> None:
    """6 / 0 asked, divide(6, 0) called, ZeroDivisionError: the tool is right."""
    run = stock_run("0", ErrorInfo(type="ZeroDivisionError", message="division by zero"),
                    ask="What is 6 / 0?")  # fmt: skip
    root = diagnose(run).root_cause
    assert root is not None and root.agent_name == "agent"


def test_a_code_fix_is_not_rerun_and_act_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun from the tool's step would run the same code: the loop ends with
    no plan (a review saw it retry the crash round after round), and `agentdebug
    act` gives the fix without offering a rerun."""
    from agentdebug import AgentDebug
    from agentdebug.rerun import closed_loop
    from toy_agent import ToyExecutor

    monkeypatch.setenv("AGENTDEBUG_HOME", str(tmp_path))
    dbg = AgentDebug(tmp_path)
    run = stock_run("SKU-123", CRASH).model_copy(update={"id": "crashed", "framework": "toy"})
    dbg.store.save_trajectory(run)
    result = closed_loop(run, debugger=dbg, executor=ToyExecutor(dbg))
    assert result.status == "no_plan"
    assert result.detail is not None and "a rerun from its step would run the same code" in (
        result.detail
    )
    assert [a.branch_id for a in result.attempts] == [None]
    dbg.close()
    act = run_cli("act", "crashed", env={"AGENTDEBUG_HOME": str(tmp_path)})
    assert act.returncode == 0, act.stderr
    assert "Fix the tool's code" in act.stdout and "No rerun" in act.stdout
    assert "To rerun" not in act.stdout


def test_code_that_raised_not_implemented_is_blamed_with_a_code_fix_not_the_call() -> None:
    """LangChain's "StructuredTool does not support sync invocation" (an async-only
    tool run by a sync invoke): no argument and no decision changes it, so the tool's
    step is blamed with a fix to code, and the loop plans no rerun (before: the
    model's call, told to fix its arguments, and rerun in vain)."""
    said = "StructuredTool does not support sync invocation."
    report = diagnose(stock_run("widgets", ErrorInfo(type="NotImplementedError", message=said)))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tools", 3)
    assert root.metadata.get("code_fix")
    assert report.fix is not None and "ainvoke" in report.fix.directive
    assert f'NotImplementedError ("{said}")' in report.fix.directive
