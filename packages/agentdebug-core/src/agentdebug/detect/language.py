"""A final answer in another language than the one the user wrote in.

A shop's agent, asked "Hallo, wie viele Tastaturen KB-7730 haben Sie noch auf
Lager?", looks the stock up right and answers "We currently have 37 units of
KB-7730 in stock": the figure is right and the customer cannot read it. Nothing
failed on the way, so without this rule the free tier guessed the first step.

A language is told by its commonest short words (articles, pronouns,
prepositions), which any sentence of it holds: a text is in a language when at
least ``MIN_HITS`` of its words are that language's, and at least twice as many as
any other's. Seven languages are known (English, German, French, Spanish,
Italian, Portuguese, Dutch); a text in none of them, or too short to tell, is in
none. The rule keeps to a failed run whose last user input in a known language
differs from its final answer's, and whose input names no language (an "answer in
English" or a "translate" makes another one the task).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "answer_language"
MIN_HITS = 4  # a language's own words in a text, for the text to be in it
_HEAD = 30  # characters of a step's output the final answer must hold to be its

_COMMON = {
    "English": "the and is are was were you your we our of to in on at for with have has "
    "this that it not be will can do does there here what how which",
    "German": "der die das und ist sind war sie ich wir ihr nicht mit auf für von zu "
    "ein eine einen haben hat wie viele noch auch bitte kann können es dem den",
    "French": "le la les et est sont vous nous je ne pas pour avec dans sur une des du "
    "au aux ce cette qui que il elle avez",
    "Spanish": "el la los las y es son usted ustedes nosotros yo no para con en una unos "
    "del al que qué cómo está están tiene hay por",
    "Italian": "il lo la gli le e è sono voi noi io non per con nel sul una degli "
    "della che come sta avete ci",
    "Portuguese": "o os as e é são você vocês nós eu não para com em um uma dos das do da "
    "que como está estão tem há",
    "Dutch": "de het een en is zijn jij je u uw wij ik mijn niet voor met op aan van te "
    "dat die hoe hebben heeft heb er nog jullie hoeveel wat naar ook bij maar dit deze "
    "kunnen wordt worden",
}
_WORDS = {lang: frozenset(words.split()) for lang, words in _COMMON.items()}
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)
# an input that names a language, or asks for a translation: another may be right
_NAMES_ONE = re.compile(
    r"\b(?:translat\w*|übersetz\w*|tradu\w*|english|englisch|anglais|inglés|ingles|inglese|"
    r"german|deutsch|allemand|alemán|aleman|tedesco|french|französisch|français|francés|"
    r"francese|spanish|spanisch|espagnol|español|spagnolo|italian|italienisch|italien|"
    r"italiano|portuguese|portugiesisch|portugais|portugués|português|dutch|"
    r"niederländisch|néerlandais|neerlandés|olandese|nederlands|language|sprache|langue|"
    r"idioma|lingua)\b",
    re.I,
)


def language(text: str) -> str | None:
    """The language ``text`` is written in, of the seven known; None where it
    cannot be told (too short, in another language, or a mix)."""
    counts = dict.fromkeys(_WORDS, 0)
    for token in _TOKEN.findall(text[:4000].lower()):
        for lang, words in _WORDS.items():
            if token in words:
                counts[lang] += 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    (best, hits), (_, second) = ranked[0], ranked[1]
    return best if hits >= MIN_HITS and hits >= 2 * second else None


def rule_answer_language(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's final answer in another language than its user's input."""
    trajectory = ctx.trajectory
    if trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = trajectory.events
    answer = next((e for e in reversed(events) if e.type is EventType.FINAL_ANSWER), None)
    if answer is None:
        return
    asked = user = None
    said = ""
    for event in reversed(events[: events.index(answer)]):
        if event.type is EventType.USER_INPUT:
            said = flatten(event.input, limit=4000)
            asked = language(said)
            if asked is not None:
                if _NAMES_ONE.search(said):
                    return  # (a language named: the answer's may be the one asked for)
                user = event
                break
    if asked is None or user is None:
        return
    text = flatten(answer.output, limit=4000)
    answered = language(text)
    if answered is None or answered == asked:
        return
    at = _author(events[: events.index(answer)], text, answered) or answer
    agent = at.agent_name or "the agent"
    wrote = flatten(at.output, limit=4000) if at is not answer else text
    yield rule_finding(
        RULE,
        "planning.instruction_noncompliance",
        at,
        f"the user wrote in {asked}; the final answer is in {answered}",
        confidence=0.7,
        evidence=[quoted(at, "output", wrote[:200]), quoted(user, "input", said[:200])],
        metadata={
            "fix": (
                f"At step {at.step_index}, {agent}: answer in the language the user "
                f"wrote in ({asked}: {shorten(said, 80)!r}); the answer was in {answered}."
            )
        },
    )


_MODEL = (EventType.LLM_RESPONSE, EventType.LLM_CALL)
_NODE = (EventType.AGENT_END,)


def _author(before: list[AgentEvent], answer: str, answered: str) -> AgentEvent | None:
    """The step that wrote the final answer's text in that language: the last model
    call, else node, whose output is in it and opens a text the answer holds (a
    graph's final state names no author: a subgraph's writer, say)."""
    for kinds in (_MODEL, _NODE):  # a model's reply before the node that returned it
        for event in reversed(before):
            if event.type not in kinds or not event.agent_name or event.output is None:
                continue
            out = flatten(event.output, limit=4000)
            head = out.strip()[:_HEAD]
            if len(head) >= _HEAD and head in answer and language(out) == answered:
                return event
    return None
