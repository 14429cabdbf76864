"""What a failed run's words point at, where no detector fired: the free tier's
guesses (:meth:`HeuristicAttributor._structural_prior`), each said to be one.

- :func:`quoted_by_reason`: the one step whose output the failure's reason quotes
  (or, quoting nothing, names a value of: "headline says 2023", "#SeriesA");
- :func:`dropped_by`: the first step that was given what the reason names and did
  not pass it on (a planner that drops a requirement, a writer that leaves out what
  a researcher found);
- :func:`answer_origin`: in a run of several agents, the other agent's step that
  first said what the answer carries (of that agent's branches, the one the reason
  singles out: :mod:`agentdebug.attribute.branches`);
- :func:`branch_named`: of a fan-out's parallel branches, the one whose output says
  what the reason names;
- :func:`failed_words` and :func:`asked_for`: a call (a lookup too) whose arguments
  hold what the reason names and the task did not give.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentdebug.attribute.branches import absent_terms, branches_of, singled_out
from agentdebug.detect.claimed import only_looks_up
from agentdebug.detect.signals import FAN_OUT, RESULT_TYPES
from agentdebug.detect.signals import QUOTED as _QUOTED
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.text import compact_json, flatten

# words of three characters or more, and numbers of two digits or more ("'41'")
_WORD = re.compile(r"\d[\d.,]*\d|[^\W_][\w$.%-]{2,}")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")  # (a number in thousands)
# what comes just before a quote of the value wanted rather than the one given
_EXPECTED = re.compile(
    r"(?:expect(?:ed|ing)?|want(?:ed)?|should (?:be|say|have been)|instead of|rather than"
    r"|not|reference|correct(?: answer)?(?: is)?|must be|needs? to be)\W*$",
    re.IGNORECASE,
)


def _said(event: AgentEvent) -> str:
    """What a decision said: its output, or a tool call's arguments."""
    said = flatten(event.output, limit=4000)
    if not said and event.type is EventType.TOOL_CALL:
        said = flatten(event.input, limit=4000)
    return said


def answer_origin(
    trajectory: AgentTrajectory, decisions: Sequence[AgentEvent]
) -> AgentEvent | None:
    """In a run of several agents whose final answer one agent gave: the earliest
    decision of another agent that first said most of what the answer carries
    (its words and numbers that the run's input does not hold), since an agent
    that passes a worker's result on repeats the worker's mistake; of those alike,
    the one that said most of what the failure's reason names (of three branches,
    the one whose "no data" failed the run). None in a run of one agent, or when no
    other agent's step said any of it."""
    finals = [e for e in trajectory.events if e.type is EventType.FINAL_ANSWER]
    if not finals or finals[-1].agent_name is None or len({e.agent_name for e in decisions}) < 2:
        return None  # (an answer no agent gave, a graph's final state: no "other" agent)
    carried = _words(flatten(finals[-1].output, limit=4000)) - _given(trajectory)
    if not carried:
        return None
    answer = set(carried)
    answerer = finals[-1].agent_name
    reason = trajectory.outcome.reason if trajectory.outcome is not None else None
    named = _terms(reason) if reason else set()  # (of steps that said as much, the
    # one that said what failed; first, one that said a thing the reason names
    # outside its quotes: "Germany" of "the capital of Germany is missing from
    # '... France -> Paris; Germany -> Munich'")
    known = _proper(flatten(finals[-1].output, limit=4000))  # (the answer's names)
    outside = _names(_QUOTED.sub(" ", reason), known) if reason else set()
    best: tuple[tuple[bool, int, int], AgentEvent] | None = None
    for event in decisions:
        if event.type is EventType.FINAL_ANSWER or event.agent_name == answerer:
            continue
        said = _said(event)
        own = _words(said)
        words = own & carried
        score = (bool(words and own & outside), len(words), len(words & named))
        if (score[0] or _telling(words, said, own, answer)) and (best is None or score > best[0]):
            best = (score, event)
        carried -= words  # (said first here: a later repeat is not its origin)
    if best is None:
        return None
    absent = absent_terms(reason, _terms) if reason else set()
    steps = branches_of(best[1].agent_name, decisions, answer, lambda e: _words(_said(e)))
    return singled_out(steps, outside, absent) or best[1]


def _proper(text: str) -> set[str]:
    """The capitalised words of ``text`` that do not open a sentence: names as the
    text writes them ("Germany", "Munich"; not "The")."""
    out: set[str] = set()
    for found in _WORD.finditer(text):
        before = text[: found.start()].rstrip()
        if found.group()[0].isupper() and before and before[-1] not in ".!?":
            out.add(_key(found.group()))
    return out


def _names(text: str, known: set[str]) -> set[str]:
    """The words of ``text`` that name a thing: a value (:func:`_value_like`), a
    name as ``text`` writes it (:func:`_proper`), or one of the ``known`` names
    however it is written ("germany", "Germany's" opening the reason); not a common
    word ("capital")."""
    out = {_key(f.group()) for f in _WORD.finditer(text) if _value_like(text, f)}
    words = _words(text)
    return (out | _proper(text) | (words & known)) - _GENERIC - _STOP


def _telling(words: set[str], said: str, own: set[str], answer: set[str]) -> bool:
    """Whether an answer's words a step said first tell that the answer came from
    it: two words or more; one that is most of what the step said ("Sydney") or
    of what the answer carries ("The answer is Sydney."); or one that reads as a
    value where the step said it ("42", "LH401", "GBP": :func:`_value_like`). One
    common word of many ("hotel" of "Hotel Adlon Berlin, 180 EUR per night", in
    "your trip is booked, hotel included") is no sign of it."""
    if len(words) >= 2:
        return True
    if words and (2 * len(words) >= len(own) or 2 * len(words) >= len(answer)):
        return True
    return bool(words) and any(
        _key(w.group()) in words and _value_like(said, w) for w in _WORD.finditer(said)
    )


def _given(trajectory: AgentTrajectory) -> set[str]:
    """The words of what the run was given (its inputs): the task's own words name
    no step's mistake."""
    given: set[str] = set()
    for event in trajectory.events:
        if event.type is EventType.USER_INPUT:
            given |= _words(flatten(event.input, limit=4000) + " " + flatten(event.output, 4000))
    return given


def _value_like(text: str, found: re.Match[str]) -> bool:
    """A word of ``text`` that reads as a value, not prose: with a digit ("2023",
    "LH401"), a capital after its first letter ("SeriesA", "EUR"), or a tag's or an
    amount's sign before it ("#launch", "@ana", "$40")."""
    word = found.group()
    return (
        any(c.isdigit() for c in word)
        or any(c.isupper() for c in word[1:])
        or (found.start() > 0 and text[found.start() - 1] in "#@$€£")
    )


def _key(word: str) -> str:
    """A word as compared: lower case, no full stop after it, a number without its
    thousands' commas ("4,895" is the 4895 a later step says again)."""
    word = word.lower().rstrip(".")
    return word.replace(",", "") if _GROUPED.fullmatch(word) else word


def _words(text: str) -> set[str]:
    return {_key(w) for w in _WORD.findall(text)}


def quoted_by_reason(
    trajectory: AgentTrajectory, decisions: Sequence[AgentEvent]
) -> tuple[AgentEvent, list[str], bool] | None:
    """The one decision whose output the failure's reason quotes: a success check's
    reason that quotes a value (``f"bad total {total!r}"``) names what was wrong,
    and a word of that quote that one step's output holds, and no other step's
    (nor the run's input), points at the step that said it (of parallel branches
    alike, the one that answered differently); and whether the reason quoted it
    (else it named a value without quotes, which may be the one wanted). None when
    the reason names nothing, or no one step stands out."""
    reason = trajectory.outcome.reason if trajectory.outcome is not None else None
    if not reason:
        return None
    quoted: set[str] = set()
    for found in _QUOTED.finditer(reason):
        if _EXPECTED.search(reason[: found.start()]):
            continue  # the value wanted ("expected 'Paris', got 'Lyon'"), not the one given
        text = found.group(1) or found.group(2)
        each = list(_WORD.finditer(text))
        if len(each) > _SHORT_QUOTE:  # (a whole answer quoted: its values, not its
            each = [w for w in each if _value_like(text, w)]  # "and", "currently")
        quoted |= {_key(w.group()) for w in each}
    answered = {  # the wrong value reaches the answer: of a quote, its words there count
        w
        for e in trajectory.events
        if e.type is EventType.FINAL_ANSWER
        for w in _words(flatten(e.output, limit=4000) + " " + compact_json(e.output)[:8000])
    }
    in_quotes = bool(quoted)
    if not quoted:  # a value named without quotes, "headline says 2023", "#SeriesA": the
        # wrong one when the answer holds it (else it may be the one wanted, left out)
        quoted = answered & {
            _key(found.group())
            for found in _WORD.finditer(reason)
            if _value_like(reason, found) and not _EXPECTED.search(reason[: found.start()])
        }
    quoted -= _given(trajectory)  # (first: the task's words in the answer say nothing)
    quoted = (quoted & answered) or quoted
    if not quoted:
        return None
    deciding = {e.id for e in decisions if e.type is not EventType.FINAL_ANSWER}
    said: list[tuple[AgentEvent, set[str]]] = []  # (it holds what every step said)
    relayed: set[str] = set()  # what a tool's result or a node's update held before:
    for e in trajectory.events:  # a step that says it again relays it (a template's
        if e.id in deciding:  # 'easy run', the '16 weeks' a retrieval node wrote)
            said.append((e, (_words(flatten(e.output, limit=4000)) & quoted) - relayed))
        elif e.type in RESULT_TYPES or e.type is EventType.AGENT_END:
            relayed |= _words(flatten(e.output, limit=4000)) & quoted
    seen: dict[str, int] = {}
    for _, words in said:
        for w in words:
            seen[w] = seen.get(w, 0) + 1
    ranked = sorted(
        ((sorted(w for w in words if seen[w] == 1), e) for e, words in said),
        key=lambda item: -len(item[0]),
    )
    if (
        not ranked
        or not ranked[0][0]
        or (len(ranked) > 1 and len(ranked[1][0]) == len(ranked[0][0]))
    ):
        return None
    own, event = ranked[0]
    return event, own, in_quotes


# words a failure's reason uses about any run, which name no fact of this one
_GENERIC = frozenset(
    {
        "expected",
        "format",
        "formatted",
        "match",
        "matches",
        "matched",
        "wrong",
        "correct",
        "correctly",
        "instead",
        "missing",
        "error",
        "errors",
        "failed",
        "fails",
        "failure",
        "valid",
        "invalid",
        "value",
        "values",
        "number",
        "numbers",
        "field",
        "fields",
        "string",
        "contain",
        "contains",
        "include",
        "includes",
        "included",
        "return",
        "returns",
        "check",
        "checked",
        "passed",
        "empty",
        "right",
        "could",
        "found",
        "shown",
        "shows",
        "total",
        "something",
        "anything",
        "nothing",
        "everything",
        "cannot",
        "about",
        "above",
        "after",
        "again",
        "against",
        "agent",
        "answer",
        "answered",
        "answers",
        "asked",
        "because",
        "before",
        "being",
        "below",
        "between",
        "both",
        "call",
        "called",
        "calls",
        "does",
        "doing",
        "done",
        "during",
        "each",
        "every",
        "final",
        "from",
        "give",
        "given",
        "gives",
        "have",
        "having",
        "into",
        "itself",
        "just",
        "more",
        "most",
        "must",
        "never",
        "none",
        "only",
        "other",
        "output",
        "over",
        "reason",
        "reply",
        "response",
        "result",
        "results",
        "returned",
        "same",
        "says",
        "should",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "under",
        "until",
        "user",
        "very",
        "what",
        "when",
        "where",
        "which",
        "while",
        "whom",
        "with",
        "without",
        "would",
        "your",
    }
)
_LONG = 5  # letters of a reason's word to follow (a code such as "LH402" is one)
_SHORT_QUOTE = 4  # words of a quote that all count (a longer one: its values)
_SAYS = 40  # characters of a model call's output for it to pass anything on


_CONTRACTED = re.compile(r"\b\w+['’]\w+\b")  # "doesn't", "it's": said of any run
_MODEL = (EventType.LLM_RESPONSE, EventType.LLM_CALL)


def _data(event: AgentEvent) -> str:
    """What an event puts into the run as data: the run's input, a tool's result,
    a step's output; not a model call's prompt (its instructions are no fact)."""
    if event.type is EventType.USER_INPUT:
        return flatten(event.input, 4000) + " " + flatten(event.output, 4000)
    if event.type is EventType.FINAL_ANSWER:
        return ""
    return flatten(event.output, limit=4000)


def _acting(
    trajectory: AgentTrajectory, calls: Sequence[AgentEvent], call: AgentEvent
) -> AgentEvent:
    """For a call that only looked things up (``find_slots``), the first later call of
    its agent that acted, whose prompt went on from it (``prompt_new_from``: it was
    given the same words): the lookup had no use for them, the act did; unless the
    lookup asked for what failed (:func:`asked_for`)."""
    if not only_looks_up(call) or asked_for(call, failed_words(trajectory)):
        return call
    for later in calls[calls.index(call) + 1 :]:
        if later.agent_name != call.agent_name:
            continue
        start = later.metadata.get("prompt_new_from")
        if not isinstance(start, int) or isinstance(start, bool):
            break  # (a prompt made afresh: not given what the lookup was)
        if not only_looks_up(later):
            return later
    return call


def dropped_by(
    trajectory: AgentTrajectory, decisions: Sequence[AgentEvent]
) -> tuple[AgentEvent, list[str]] | None:
    """The first model call that was given what the failure's reason names and did
    not pass it on (where it was lost; a later one given it too may have missed it as
    well), of those that said something (``_SAYS`` characters: a router's label has
    nothing to pass on): words of the reason (five letters or more, none said of
    every run, nor given to every model call: its instructions) that the run's data
    held before it (its input, a tool's result, another step's output), that its own
    input held, and that neither its output nor any later step's output holds. A
    planner that left a requirement out of its plan, a writer that left out what a
    researcher found. None when no model call was given such a word, or the reason
    names none. Each event's words are read once, kept to the reason's."""
    reason = trajectory.outcome.reason if trajectory.outcome is not None else None
    if not reason:
        return None
    named = {
        w for w in _words(_CONTRACTED.sub(" ", reason)) if len(w) >= _LONG and w not in _GENERIC
    }
    calls = [e for e in decisions if e.type in _MODEL]
    if not named or not calls:
        return None
    given = {c.id: _words(flatten(c.input, limit=8000)) & named for c in calls}
    if len(calls) > 1:
        sets = list(given.values())
        named -= sets[0].intersection(*sets[1:])  # (every call's instructions)
    events = trajectory.events
    said = [_words(_data(e)) & named for e in events]
    later: list[set[str]] = [set() for _ in events]  # what the steps after each said
    for i in range(len(events) - 2, -1, -1):
        later[i] = later[i + 1] | said[i + 1]
    candidates = {c.id for c in calls if len(flatten(c.output, limit=400)) >= _SAYS}
    held: set[str] = set()
    for i, event in enumerate(events):
        if event.id in candidates:
            lost = (named & held & given[event.id]) - said[i] - later[i]
            if lost:
                return _acting(trajectory, calls, event), sorted(lost)
        held |= said[i]
    return None


def branch_named(
    trajectory: AgentTrajectory, pick: AgentEvent, decisions: Sequence[AgentEvent]
) -> AgentEvent | None:
    """Of parallel branches alike (starts of ``pick``'s agent marked ``FAN_OUT``
    that one other step started: a fan-out's, not a loop's turns), the decision of the branch whose
    output says most of what the failure's reason names, when it is not ``pick``'s
    and says strictly more (of three workers, the one whose "no data" failed the
    run); None otherwise."""
    reason = trajectory.outcome.reason if trajectory.outcome is not None else None
    if not reason:
        return None
    by_id = {e.id: e for e in trajectory.events}

    def sender(event: AgentEvent) -> str | None:
        start = by_id.get(event.parent_id) if event.parent_id else None
        if (
            start is None
            or start.type is not EventType.AGENT_START
            or start.metadata.get(FAN_OUT) is not True  # (not a loop's turn, a subgraph's)
            or not start.parent_id
        ):
            return None
        above = by_id.get(start.parent_id)
        return above.id if above is not None and above.type is EventType.AGENT_START else None

    started_by = sender(pick)
    if started_by is None:
        return None
    named = _terms(reason) - _given(trajectory)
    alike = [
        e
        for e in decisions
        if e.agent_name == pick.agent_name and e.type is pick.type and sender(e) == started_by
    ]
    scored = sorted(
        ((len(_words(flatten(e.output, limit=4000)) & named), e) for e in alike),
        key=lambda item: -item[0],
    )
    if len(scored) < 2 or scored[0][1] is pick or scored[0][0] == scored[1][0]:
        return None
    return scored[0][1]


# short words any reason uses, which name nothing of the run ("has", "for", "the"
# are under four letters already)
_STOP = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "have",
        "were",
        "been",
        "does",
        "when",
        "then",
        "than",
        "what",
        "which",
        "there",
        "their",
        "they",
        "them",
        "some",
        "only",
        "into",
        "also",
        "just",
        "more",
        "most",
        "very",
        "over",
        "about",
        "after",
        "before",
    ]
)


def _terms(reason: str) -> set[str]:
    """The words of a failure's reason that may name what failed: four letters or
    more, none said of any run (``_GENERIC``, ``_STOP``), no numbers ("100" is said
    of many things), none of a quote of the value wanted ("expected 'UNKNOWN'")."""
    return {
        w
        for w in _words(_unwanted(reason))
        if len(w) >= 4 and w.isalpha() and w not in _GENERIC and w not in _STOP
    }


def _unwanted(reason: str) -> str:
    """The reason without its quotes of the value wanted ("expected '2024-05-14'"):
    what it says went wrong."""
    wanted = [
        found.span()
        for found in _QUOTED.finditer(reason)
        if _EXPECTED.search(reason[: found.start()])
    ]
    for start, end in reversed(wanted):
        reason = reason[:start] + " " + reason[end:]
    return reason


def failed_words(trajectory: AgentTrajectory) -> set[str]:
    """The words and figures of the failure's reason that the task did not give and
    that are not the value it says was wanted: what :func:`asked_for` looks for in a
    call's arguments. Read once a run."""
    reason = trajectory.outcome.reason if trajectory.outcome is not None else None
    if not reason:
        return set()
    terms = _terms(reason)
    named = {w for w in _tokens(_unwanted(reason)) if w in terms or _digits(w)}
    for event in trajectory.events:
        if event.type is EventType.USER_INPUT and named:
            named -= _tokens(flatten(event.input, limit=4000) + " " + flatten(event.output, 4000))
    return named


def asked_for(call: AgentEvent, named: set[str]) -> bool:
    """A call whose arguments hold one of ``named`` (:func:`failed_words`): a search
    for "Wednesday" where "the customer wanted Tuesday but got a Wednesday booking";
    a lookup that asked for the wrong thing is itself where the run went wrong."""
    if not named:
        return False
    out = call.output
    if call.type is EventType.TOOL_CALL:
        args: Any = call.input
    elif isinstance(out, dict) and isinstance(out.get("tool_calls"), list):
        args = [c.get("args") for c in out["tool_calls"] if isinstance(c, dict)]
    else:
        return False
    return bool(_tokens(compact_json(args)) & named)


_TOKEN = re.compile(r"[^\W_]+(?:[-:./][^\W_]+)*")


def _tokens(text: str) -> set[str]:
    """Words and figures whole: a date ("2024-05-15"), a time ("14:30"), a code."""
    return {t.lower() for t in _TOKEN.findall(text)}


def _digits(word: str) -> bool:
    """A figure of three characters or more ("2023", "14:30"), not a 1 or a 12."""
    return len(word) >= 3 and any(c.isdigit() for c in word)
