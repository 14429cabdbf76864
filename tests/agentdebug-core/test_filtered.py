"""A selection (a reranker keeping the top two chunks) that dropped the chunk the
run turned out to need: blamed on the selection, not the model that answered
truthfully from what it was given."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

SERVICES = "1. Services. The Supplier provides cloud hosting as described in Schedule A."
FEES = "4. Fees. The Customer pays the monthly fees in Schedule B within 30 days."
NOTICE = "11. Termination. Either party may end the agreement by giving 90 days' written notice."
LIABILITY = "7. Liability. Liability is capped at the fees paid in the preceding 12 months."
CHUNKS = [SERVICES, FEES, NOTICE, LIABILITY]
REASON = "answer does not give the 90-day termination notice period the user asked for"
ANSWER = "The excerpts cover services and fees; they do not give a termination notice period."


def pipeline(
    kept: list[Any],
    *,
    found: list[Any] = CHUNKS,
    prompt: str | None = None,
    reason: str | None = REASON,
    reference: str | None = None,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    shown = prompt if prompt is not None else "\n".join(str(k) for k in kept)
    events: list[AgentEvent] = [
        ev(0, EventType.USER_INPUT, None, input={"question": "Fees, and the notice period?"}),
        ev(1, EventType.AGENT_START, "retrieve"),
        ev(2, EventType.AGENT_END, "retrieve", output={"docs": found}),
        ev(3, EventType.AGENT_START, "rerank"),
        ev(4, EventType.AGENT_END, "rerank", output={"context": kept}),
        ev(5, EventType.AGENT_START, "answer"),
        ev(
            6,
            EventType.LLM_RESPONSE,
            "answer",
            input=[{"role": "user", "content": shown}],
            output={"role": "assistant", "content": ANSWER},
        ),
        ev(7, EventType.AGENT_END, "answer", output={"answer": ANSWER}),
        ev(8, EventType.FINAL_ANSWER, None, output={"docs": found, "answer": ANSWER}),
    ]
    run = traj(*events)
    return run.model_copy(
        update={"outcome": Outcome(status=status, reason=reason), "reference_answer": reference}
    )


def found_in(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "needed_item_dropped"]


def test_the_selection_that_dropped_the_needed_chunk_is_blamed_with_a_fix() -> None:
    run = pipeline([SERVICES, FEES])
    (finding,) = found_in(run)
    assert finding.message == (
        "rerank kept 2 of the items retrieve had at step 2 ('context') and dropped "
        f"{NOTICE!r}, the one that holds what the run lacked (90, notice, termination); "
        "no step after it was given that item"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("rerank", 4, "memory.context_loss")
    assert report.fix is not None and report.fix.directive == (
        f"At step 4, rerank: keep {NOTICE!r} (what retrieve found at step 2); the selection "
        "into 'context' dropped it, and the run needed it (90, notice, termination). Select "
        "on every part of the request, or keep more than 2 items."
    )


def test_documents_and_a_reference_answer_are_read_as_well() -> None:
    docs = [{"page_content": c, "metadata": {"id": i}} for i, c in enumerate(CHUNKS)]
    run = pipeline(docs[:2], found=docs, reason=None, reference="90 days' written notice")
    (finding,) = found_in(run)
    assert finding.agent_name == "rerank" and NOTICE in finding.message


@pytest.mark.parametrize(
    "run",
    [
        # the answering model was given the chunk after all: its own fault, not the selection's
        pipeline([SERVICES, FEES], prompt=f"{SERVICES}\n{NOTICE}"),
        # a kept chunk holds what was needed as well as the dropped one
        pipeline(
            [SERVICES, NOTICE.replace("11.", "12.")], found=[*CHUNKS, NOTICE.replace("11.", "12.")]
        ),
        # nothing dropped: the same chunks in another order
        pipeline([FEES, SERVICES, NOTICE, LIABILITY]),
        # not a part of what was found: rewritten, not selected
        pipeline([SERVICES.upper(), FEES.upper()]),
        # the dropped chunks hold one term of what was missing at most
        pipeline([SERVICES, NOTICE], reason="the answer does not give the liability limit"),
        # no reason said what was missing
        pipeline([SERVICES, FEES], reason=None),
        # a run that did not fail
        pipeline([SERVICES, FEES], status=OutcomeStatus.SUCCESS),
        # labels, not passages
        pipeline(["fees", "services"], found=["fees", "services", "termination notice 90"]),
    ],
)
def test_not_a_dropped_needed_item(run: AgentTrajectory) -> None:
    assert found_in(run) == []


@pytest.mark.parametrize(
    ("found", "kept"),
    [
        # a heading among the chunks retrieved is no passage, and does not hide the rest
        ([*CHUNKS, "## Contract"], [SERVICES, FEES]),
        # (document, score) pairs, as similarity_search_with_score gives them
        ([[{"page_content": c}, 0.9 - i / 10] for i, c in enumerate(CHUNKS)], [SERVICES, FEES]),
        # the top passages joined into one context string
        (CHUNKS, f"{SERVICES}\n\n{FEES}"),
    ],
)
def test_common_rag_shapes_are_read(found: list[Any], kept: Any) -> None:
    (finding,) = found_in(pipeline(kept, found=found))
    assert finding.agent_name == "rerank" and NOTICE in finding.message


def test_a_node_whose_own_model_was_given_the_passage_lost_nothing() -> None:
    """A generating node's model saw every chunk, then the node listed the two it
    cited as sources: the passage reached a model, so nothing was lost."""
    run = pipeline([SERVICES, FEES])
    events = list(run.events)
    prompt = "\n".join(CHUNKS)
    seen = ev(30, EventType.LLM_RESPONSE, "rerank", input=[{"role": "user", "content": prompt}])
    events.insert(4, seen)  # after rerank's start, before its end
    assert found_in(run.model_copy(update={"events": events})) == []


def test_a_later_model_given_the_passage_deep_in_a_long_prompt_counts() -> None:
    run = pipeline([SERVICES, FEES], prompt="x" * 30000 + NOTICE)
    assert found_in(run) == []
