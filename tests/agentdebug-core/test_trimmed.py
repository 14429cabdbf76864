"""An answer given without the conversation's instructions, which a trim cut, is
blamed on the trim, not on the model that answered without them."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.detect.signals import INSTRUCTIONS
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

RULES = (
    "You are Sunbird's disruption assistant. Never promise or estimate compensation "
    "amounts: EU261 claims are assessed by Claims within 14 days."
)
HISTORY = [
    {"role": "user", "content": "What's the new departure time?"},
    {"role": "assistant", "content": "SB214 now departs at 19:40."},
    {"role": "user", "content": "Will I get EU261 compensation?"},
]
REASON = "she was told she'd get EUR 400 compensation, paid in 7 days; Claims will reject it"


def chat(kept: list[dict[str, Any]] = HISTORY, reason: str = REASON) -> AgentTrajectory:
    """Turn 2 of a chat: window (code: keeps the newest messages) -> assistant (a model)."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"messages": [HISTORY[-1]]}),
        ev(1, EventType.AGENT_START, "window").model_copy(
            update={"id": "s1", "metadata": {INSTRUCTIONS: [RULES]}}
        ),
        ev(1, EventType.AGENT_END, "window", output={"window": kept}, parent_id="s1"),
        ev(2, EventType.AGENT_START, "assistant").model_copy(update={"id": "s2"}),
        ev(2, EventType.LLM_RESPONSE, "assistant", input=kept,
           output={"role": "assistant", "content": "Yes: EUR 400, paid within 7 days."}),
        ev(2, EventType.AGENT_END, "assistant", output={"messages": []}, parent_id="s2"),
    )  # fmt: skip
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "instruction_trimmed"]


def test_the_trim_that_cut_the_instructions_is_blamed_not_the_answer() -> None:
    run = chat()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("window", 1)
    assert finding.mode_id == "memory.context_loss"
    assert finding.message == (
        "The conversation's instructions (\"You are Sunbird's disruption assistant. Never "
        'promise or es…", held at step 1) share claims, compensation, days with the '
        "failure, and the prompt of assistant's answer at step 2 does not hold them: window "
        "at step 1 made the messages it was given and left them out"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("window", 1)
    assert report.fix is not None and report.fix.directive == (
        "At step 1, window: keep the system message when it cuts the conversation down "
        "(LangChain's trim_messages(..., include_system=True)), or put it back in front of "
        "what it keeps."
    )


def test_instructions_in_the_run_s_input_count_and_a_node_that_built_the_prompt_is_blamed() -> None:
    run = chat()
    run.events[0] = ev(0, EventType.USER_INPUT, None,
                       input={"messages": [{"role": "system", "content": RULES}, *HISTORY]})  # fmt: skip
    run.events[1] = run.events[1].model_copy(update={"metadata": {}})
    run.events[2] = run.events[2].model_copy(update={"output": {"n": 2}})  # (no message list)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("assistant", 2)
    assert "assistant's code built that prompt without them" in finding.message


def test_a_prompt_with_the_instructions_or_a_failure_about_something_else_is_left_alone() -> None:
    kept = [{"role": "system", "content": RULES}, *HISTORY]
    assert found(chat(kept)) == []
    assert found(chat(reason="the reply came 40 seconds late")) == []  # (nothing shared)
    # a prompt of one message: a call with a prompt of its own, not the conversation
    assert found(chat(HISTORY[-1:])) == []
    ok = chat().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


def test_a_call_that_recorded_only_its_new_messages_is_read_whole() -> None:
    # the assistant's first call had the instructions; its second records only what
    # it had not seen: the instructions are still at the front of its prompt
    run = chat([{"role": "system", "content": RULES}, *HISTORY])
    run.events.insert(5, ev(2, EventType.LLM_RESPONSE, "assistant",
        input=[{"role": "user", "content": "And a voucher?"}],
        output={"role": "assistant", "content": "Yes, EUR 400 compensation."},
        metadata={"prompt_new_from": 4, "prompt_messages": 5}))  # fmt: skip
    assert found(run) == []


# -- faults a review found: each a test --------------------------------------------


def test_a_node_that_added_one_message_is_not_the_trim() -> None:
    # the answer's own node cut the history (messages[-4:]); a tools node before it
    # added a tool's answer: the answer's step is blamed, not the tools node
    run = chat()
    run.events[2] = run.events[2].model_copy(
        update={"output": {"messages": [{"role": "tool", "content": "SB214: 19:40"}]}}
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("assistant", 2)


def test_instructions_restated_or_a_later_call_of_its_own_are_not_cut() -> None:
    restated = [{"role": "system", "content": "Today is 2025-07-02. " + RULES}, *HISTORY]
    assert found(chat(restated)) == []
    # the answer had the rules; a title the model wrote after, with a prompt of its own
    run = chat([{"role": "system", "content": RULES}, *HISTORY])
    run.events.append(
        ev(3, EventType.LLM_RESPONSE, "title",
           input=[{"role": "system", "content": "Title this chat."}, HISTORY[-1]],
           output={"role": "assistant", "content": "EU261 question"}),
    )  # fmt: skip
    assert found(run) == []


def test_an_answer_written_in_content_blocks_is_read() -> None:
    run = chat()
    blocks = [{"type": "text", "text": "Yes: EUR 400, paid within 7 days."}]
    run.events[4] = run.events[4].model_copy(
        update={"output": {"role": "assistant", "content": blocks}}
    )
    assert [(f.agent_name, f.step_index) for f in found(run)] == [("window", 1)]
