"""A final answer in another language than the user wrote in: blamed on the model
call that wrote it (else the answer), with a fix naming the user's language; not
where the user named a language."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.detect.language import language
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

ASKED = "Hallo, wie viele Tastaturen KB-7730 haben Sie noch auf Lager?"
ANSWER = "We currently have 37 units of KB-7730 in stock at our Leipzig warehouse."


def shop_run(
    asked: str, answer: str, *, status: OutcomeStatus = OutcomeStatus.FAILURE
) -> AgentTrajectory:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input=[{"role": "user", "content": asked}]),
        ev(1, EventType.TOOL_CALL, "shop_bot", input={"sku": "KB-7730"}),
        ev(2, EventType.TOOL_RESULT, "tools", output="37 units in warehouse Leipzig"),
        ev(3, EventType.LLM_RESPONSE, "shop_bot", output=answer),
        ev(4, EventType.FINAL_ANSWER, "shop_bot", output=answer),
    )
    return run.model_copy(update={"outcome": Outcome(status=status, reason="wrong reply")})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "answer_language"]


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        (ASKED, "German"),
        (ANSWER, "English"),
        ("Bonjour, est-ce que vous avez ce clavier dans le magasin de Lyon ?", "French"),
        ("Hola, ¿cuántos teclados tiene usted en la tienda de Madrid para el lunes?", "Spanish"),
        ("Ciao, quante tastiere avete nel negozio di Roma per la settimana che viene?", "Italian"),
        ("Olá, quantos teclados você tem na loja do Porto para a semana que vem?", "Portuguese"),
        ("Hallo, hoeveel toetsenborden hebben jullie nog op voorraad in de winkel?", "Dutch"),
        ("KB-7730: 37", None),  # too short to tell
        ("Danke!", None),
    ],
)
def test_a_text_s_language_is_told_by_its_common_words(text: str, lang: str | None) -> None:
    assert language(text) == lang


def test_an_english_answer_to_a_german_customer_is_blamed_with_a_fix() -> None:
    run = shop_run(ASKED, ANSWER)
    (finding,) = found(run)
    assert finding.message == "the user wrote in German; the final answer is in English"
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "shop_bot",
        3,
        "planning.instruction_noncompliance",
    )
    assert report.fix is not None and report.fix.directive == (
        f"At step 3, shop_bot: answer in the language the user wrote in (German: {ASKED!r}); "
        "the answer was in English."
    )


@pytest.mark.parametrize(
    ("asked", "answer", "status"),
    [
        # the same language
        (ASKED, "Wir haben noch 37 Tastaturen KB-7730 auf Lager in Leipzig.", "failure"),
        # a language named in the input: the answer's may be the one asked for
        (ASKED + " Bitte auf Englisch antworten.", ANSWER, "failure"),
        ("Translate into German: we have 37 keyboards in stock.", ASKED, "failure"),
        # an answer too short to tell
        (ASKED, "37 (KB-7730)", "failure"),
        # a run that succeeded
        (ASKED, ANSWER, "success"),
    ],
)
def test_what_is_not_an_answer_in_another_language(asked: str, answer: str, status: str) -> None:
    assert not found(shop_run(asked, answer, status=OutcomeStatus(status)))


def test_a_graph_s_final_state_is_blamed_on_the_writer_that_wrote_the_answer() -> None:
    """A LangGraph run's final answer is its final state, which names no author: the
    subgraph writer's model call that wrote the answer is blamed, not an unnamed
    agent (nor the subgraph's node, whose end holds the answer too)."""
    state = {"question": ASKED, "answer": ANSWER}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"question": ASKED}),
        ev(1, EventType.AGENT_START, "team"),
        ev(2, EventType.AGENT_START, "team/writer"),
        ev(3, EventType.LLM_RESPONSE, "team/writer", output={"content": ANSWER}),
        ev(4, EventType.AGENT_END, "team/writer", output={"answer": ANSWER}),
        ev(5, EventType.AGENT_END, "team", output=state),
        ev(6, EventType.FINAL_ANSWER, None, output=state),
    ).model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="English")})
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("team/writer", 3)
