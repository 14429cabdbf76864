"""A model answer cut at its output-token limit is a finding: the API said so
(``finish_reason: length``, Anthropic's ``stop_reason: max_tokens``), and the
text alone reads like a whole answer."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.schema import EventType
from conftest import ev, traj


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("metadata", "length"),  # (as the LangGraph plugin records it)
        ("output", "length"),  # (as the OpenTelemetry importer keeps it)
        ("output", "max_tokens"),  # (Anthropic's stop_reason)
    ],
)
def test_a_cut_answer_is_found_and_quoted_where_it_stops(where: str, reason: str) -> None:
    text = "The cheapest nonstop fare from Boston to Denver on December 14 is UA 1234 at"
    key = "finish_reason" if reason == "length" else "stop_reason"
    fields: dict[str, Any] = (
        {"output": text, "metadata": {key: reason}}
        if where == "metadata"
        else {"output": {"content": text, key: reason}}
    )
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="cheapest BOS-DEN nonstop on Dec 14?"),
        ev(1, EventType.LLM_RESPONSE, "searcher", **fields),
        ev(2, EventType.FINAL_ANSWER, "searcher", output=text),
    )
    report = diagnose(run)
    (found,) = [f for f in report.findings if f.rule_id == "cut_answer"]
    assert (found.step_index, found.mode_id) == (1, "system.resource_exhaustion")
    assert f"searcher's model stopped at its output-token limit ({reason})" in found.message
    assert found.evidence and found.evidence[0].grounded
    assert text.endswith(found.evidence[0].quote)


def test_an_answer_that_ended_as_answers_do_is_not_a_finding() -> None:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="hi"),
        ev(1, EventType.LLM_RESPONSE, "a", output="Hello!", metadata={"finish_reason": "stop"}),
        ev(2, EventType.LLM_RESPONSE, "a", output={"content": "Bye", "stop_reason": "end_turn"}),
    )
    assert not [f for f in diagnose(run).findings if f.rule_id == "cut_answer"]


def test_a_cut_the_agent_got_past_is_resolved_and_the_fix_raises_the_limit() -> None:
    """Review findings: a cut answer followed by a whole one was blamed as the
    failure of a run that succeeded; and the fix said "shrink the input"."""
    cut = ev(
        1, EventType.LLM_RESPONSE, "a", output="The fare is", metadata={"finish_reason": "length"}
    )
    whole = ev(2, EventType.LLM_RESPONSE, "a", output="The fare is $189.")
    run = traj(ev(0, EventType.USER_INPUT, None, input="fare?"), cut, whole)
    (found,) = [f for f in diagnose(run).findings if f.rule_id == "cut_answer"]
    assert found.severity.value == "info" and found.confidence < 0.3
    assert "(resolved: its model's answer at step 2 was whole)" in found.message

    alone = traj(ev(0, EventType.USER_INPUT, None, input="fare?"), cut)
    report = diagnose(alone)
    assert report.root_cause is not None and report.root_cause.step_index == 1
    assert report.fix is not None
    assert "Raise the call's output-token limit (max_tokens" in report.fix.directive
    assert "Shrink the input" not in report.fix.directive
