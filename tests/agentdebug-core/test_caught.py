"""A sub-agent's error its caller caught: the code that called the sub-agent (a
LangGraph entrypoint calling a task, a node running a graph) went on and ended as
usual, so the error is handled (a fallback), not a fault left standing; an error
the sub-agent got past itself is not its caller's to catch."""

from __future__ import annotations

from agentdebug.detect.recovery import recovered_by_the_agent
from agentdebug.detect.signals import failure_of
from agentdebug.schema import AgentEvent, EventType
from conftest import ev


def _recovered(events: list[AgentEvent]) -> dict[str, AgentEvent]:
    failures = {e.id: f for e in events if (f := failure_of(e)) is not None}
    return recovered_by_the_agent(events, failures, {})


def test_an_error_that_made_a_sub_agent_raise_is_caught_by_its_callers_usual_end() -> None:
    events = [
        ev(0, EventType.AGENT_START, "wf"),
        ev(1, EventType.LLM_RESPONSE, "wf/ask", error="TimeoutError: timed out"),
        ev(2, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(3, EventType.AGENT_START, "wf/backup"),
        ev(4, EventType.LLM_RESPONSE, "wf/backup", output="Lyon"),
        ev(5, EventType.AGENT_END, "wf", output="Lyon"),
    ]
    assert set(_recovered(events)) == {"e1", "e2"}
    inline = [  # (the fallback a model call in the caller's own code)
        ev(0, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(1, EventType.LLM_RESPONSE, "wf", output="Lyon"),
        ev(2, EventType.AGENT_END, "wf", output="Lyon"),
    ]
    assert set(_recovered(inline)) == {"e0"}


def test_a_task_running_beside_the_failed_one_all_along_is_no_fallback() -> None:
    """A review's find: a parallel task started before the error, which finished
    after it, hid a timeout the entrypoint only apologised for."""
    events = [
        ev(0, EventType.AGENT_START, "wf/weather"),
        ev(1, EventType.AGENT_START, "wf/ask"),
        ev(2, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(3, EventType.LLM_RESPONSE, "wf/weather", output="sunny"),
        ev(4, EventType.AGENT_END, "wf", output="Sorry, I could not answer."),
    ]
    assert not _recovered(events)


def test_an_error_the_sub_agent_got_past_itself_or_one_its_caller_raised_on_is_not() -> None:
    handled = [  # (a tool node turned the error into a message; the sub-agent went on)
        ev(0, EventType.TOOL_RESULT, "lead/tools", error="ValueError: bad id",
           metadata={"tool_name": "lookup"}),
        ev(1, EventType.AGENT_END, "lead", output="done"),
    ]  # fmt: skip
    assert "e0" not in _recovered(handled)
    propagated = [
        ev(0, EventType.ERROR, "lead/sub", error="KeyError: 'x'"),
        ev(1, EventType.AGENT_END, "lead", error="KeyError: 'x'"),
    ]
    assert "e0" not in _recovered(propagated)


def test_an_error_caught_with_no_fallback_or_a_failed_one_is_still_the_cause() -> None:
    """A review's find: the entrypoint caught the timeout and apologised, or its
    backup failed too: nothing got past the error, which stays the cause."""
    apology = [
        ev(0, EventType.LLM_RESPONSE, "wf/ask", error="TimeoutError: timed out"),
        ev(1, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(2, EventType.AGENT_END, "wf", output="Sorry, no answer."),
    ]
    assert not _recovered(apology)
    both = [
        ev(0, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(1, EventType.ERROR, "wf/backup", error="ConnectionError: down"),
        ev(2, EventType.AGENT_END, "wf", output="Sorry, no answer."),
    ]
    assert not _recovered(both)
    apologised = [  # (a "fallback" task that only says sorry: no work in the step's place)
        ev(0, EventType.ERROR, "wf/ask", error="TimeoutError: timed out"),
        ev(1, EventType.AGENT_START, "wf/apologize"),
        ev(2, EventType.AGENT_END, "wf/apologize", output="Sorry, I could not answer that."),
        ev(3, EventType.AGENT_END, "wf", output="Sorry, I could not answer that."),
    ]
    assert not _recovered(apologised)


def test_a_graph_a_node_ran_is_caught_by_the_node() -> None:
    """``lead/researcher/search``: the node ``lead`` ran the graph ``researcher``;
    the node is the caller that ends (the graph records no end of its own)."""
    events = [
        ev(0, EventType.ERROR, "lead/researcher/search", error="TimeoutError: timed out"),
        ev(1, EventType.AGENT_START, "lead/backup/model"),
        ev(2, EventType.LLM_RESPONSE, "lead/backup/model", output="found it"),
        ev(3, EventType.AGENT_END, "lead", output="found it"),
    ]
    assert set(_recovered(events)) == {"e0"}
