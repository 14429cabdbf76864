"""A model that names the right step but no failure mode: the mode a detector found
there comes first, and with it the fix that names the failed call. A review found
all-at-once and step-by-step left the report with no fix (binary search did not),
and `act` then said no failure mode was detected, though the rules had found one.
Through the real openai client, over HTTP, to a scripted local server."""

from __future__ import annotations

import json

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.llm.testing import ScriptedServer
from agentdebug.recover import NativeRecoverer
from agentdebug.schema import ErrorInfo, EventType, Outcome, OutcomeStatus
from conftest import ev, traj
from test_model_prompts import EXAMPLE, schema_name, settings_for

BLAME = {"agent": "searcher", "step": 3, "failure_mode": None, "reason": "bad date",
         "evidence": [], "fix": "", "confidence": 0.8}  # fmt: skip
VERDICT = {"reason": "bad date", "evidence": "", "fix": "", "failure_mode": None,
           "error_probability": 0.9, "decisive": True}  # fmt: skip


class Answers:
    """The attribution, or step by step: steps 1 and 2 (the planner's) judged fine."""

    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, request: dict[str, object]) -> str:
        if schema_name(request) != "StepVerdict":
            return json.dumps(BLAME)
        self.steps += 1
        fine = {**VERDICT, "error_probability": 0.05, "decisive": False}
        return json.dumps(VERDICT if self.steps == 3 else fine)


@pytest.mark.parametrize("attributor", ["all-at-once", "step-by-step"])
def test_the_mode_a_detector_found_at_the_blamed_step_gives_the_fix(attributor: str) -> None:
    with ScriptedServer(Answers()) as server:
        report = diagnose(EXAMPLE, attributor=attributor, settings=settings_for(server))
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 3)
    assert root.mode_id == "action.malformed_tool_call"
    assert report.fix is not None and "search_fares(" in report.fix.directive
    plan = NativeRecoverer().recover(EXAMPLE, report)
    assert not plan.rationale.startswith("generic directive")


def test_a_notice_at_the_step_does_not_replace_the_models_own_mode() -> None:
    """A second review: a timeout the same call got past (a notice, not a fault)
    replaced the mode the model named, "misread the fares", with a timeout and its
    "retry with a longer limit" fix."""
    pay = {"tool_name": "search_fares"}
    asked = {"from": "LIS", "to": "BER"}
    fares = {"fares": [{"flight": "TP530", "price": 412}, {"flight": "FR123", "price": 89}]}
    timeout = ErrorInfo(type="ReadTimeout", message="ReadTimeout: the read operation timed out")
    events = [
        ev(0, EventType.USER_INPUT, None, input="Book the cheapest LIS->BER fare"),
        ev(1, EventType.TOOL_CALL, "searcher", input=asked, metadata=pay),
        ev(2, EventType.TOOL_RESULT, "searcher", error=timeout, metadata=pay, parent_id="e1"),
        ev(3, EventType.TOOL_CALL, "searcher", input=asked, metadata=pay),
        ev(4, EventType.TOOL_RESULT, "searcher", output=fares, metadata=pay, parent_id="e3"),
        ev(5, EventType.LLM_RESPONSE, "searcher", output={"content": "Cheapest: TP530, 412 EUR."}),
        ev(6, EventType.FINAL_ANSWER, "searcher", output="Booked TP530 for 412 EUR."),
    ]
    events[1:6] = [e.model_copy(update={"step_index": 1}) for e in events[1:6]]  # (one step)
    run = traj(*events).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="booked the dearer of the two fares")})  # fmt: skip
    misread = {**BLAME, "step": 1, "failure_mode": "observation.output_misread"}
    with ScriptedServer([json.dumps(misread)]) as server:
        report = diagnose(run, attributor="all-at-once", settings=settings_for(server))
    assert any(f.mode_id == "system.timeout" and f.step_index == 1 for f in report.findings)
    root = report.root_cause
    assert root is not None and root.mode_id == "observation.output_misread"
    # nor does the fix name the call a retry got past (it said "search_fares(...)
    # failed: ReadTimeout" before the remedy for the misread)
    assert report.fix is not None and "ReadTimeout" not in report.fix.directive
