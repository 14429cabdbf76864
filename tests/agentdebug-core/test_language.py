"""A final answer in another language than the user wrote in: blamed on the answer,
with a fix naming the user's language; not where the user named a language."""

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
        4,
        "planning.instruction_noncompliance",
    )
    assert report.fix is not None and report.fix.directive == (
        f"At step 4, shop_bot: answer in the language the user wrote in (German: {ASKED!r}); "
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
