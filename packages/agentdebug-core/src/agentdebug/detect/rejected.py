"""A reviewer's "no" at an interrupt, and the run doing what was asked about anyway.

Human-in-the-loop graphs pause to ask ("Issue a refund of $42?") and resume with
the answer. When the answer is a plain rejection and the run then runs the very
action the question named (a tool of that name, or a node), the reviewer was
overruled: a node that routed on the answer's truthiness (``"no"`` is a non-empty
string), or a model that called the tool again after being told not to. Without
this rule the free tier found nothing at all in such a run (no error, no model
call to blame) or blamed the first decision by default.

The rule keeps to what it can read for certain, in a failed run: an answer that is
a rejection and nothing more (``False``, "no", "reject", ``{"approved": false}``, a
decision of type "reject" with no message to act on: "no, refund $40 instead" is an
edit, not a rejection) to a question whose "no" cannot mean "go ahead" ("Any
changes?", "...instead?" are skipped), and an action the question named (the
tool's or the node's name, or each of its words of three letters or more, a first
one that only says "do it" left out, "issue" of ``issue_refund``, as words of the
question's own text, not of its data; a middleware's listed calls by
their exact names) that starts after the resume and before the next interrupt. It
blames who overruled: the model call that asked for the tool after the resume,
else the interrupting node's own run after the resume, which read the answer and
chose what ran next (also when what ran is the declined call itself, let through
to a ``ToolNode``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import done_form
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "rejection_overruled"
_EVENT = "langgraph_event"  # how the LangGraph plugin marks an interrupt and a resume
RESUMES = "resumes"  # a tool call's metadata: the call an interrupt paused, which it runs again
RECORDED_FROM = "recorded_from"  # a tool call's metadata: "node_update", no tool run behind it
# a dict interrupt value's fields that say what is asked (not its data)
_QUESTION_KEYS = ("question", "message", "prompt", "title", "description", "ask", "query")
# a question whose "no" may mean "go ahead": "Any changes before I issue the refund?"
_OPEN = re.compile(
    r"\b(?:any(?:thing)? (?:changes?|edits?|corrections?|objections?|concerns?|problems?|"
    r"issues?|else|to (?:change|fix|add))|anything else|(?:changes?|edits?|corrections?) "
    r"(?:to make|before)|instead|is (?:there )?(?:anything|something) wrong|"
    r"(?:should|shall) (?:i|we) (?:wait|hold off))\b",
    re.I,
)
_NO = re.compile(
    r"^\s*(?:no|nope|n|reject(?:ed)?|deny|denied|decline(?:d)?|disapprove(?:d)?|"
    r"cancel(?:led)?|abort|stop|don'?t|do not)\s*[.!]?\s*$",
    re.I,
)
# "No - policy says repair first, do not refund.": a rejection and its reason; not
# "no, refund $40 instead" (an alternative to act on: a figure, "instead", "but"...)
_NO_BECAUSE = re.compile(
    r"^\s*(?:no|nope|reject(?:ed)?|denied|declined?)\s*(?:[-–—,:;.!]|because\b)\s*\S", re.I
)
_ALTERNATIVE = re.compile(
    r"\d|\b(?:instead|but|rather|only|except|unless|change|edit|use|try|make it|go with)\b",
    re.I,
)
_VERDICT_KEYS = ("approved", "approve", "accept", "accepted", "ok", "confirmed", "allow")
_TYPE_KEYS = ("type", "action", "decision")
_REJECT_TYPES = frozenset({"reject", "rejected", "deny", "denied", "decline", "cancel"})
_WORD = re.compile(r"[a-z][a-z0-9]*")
MIN_WORD = 3  # letters of a name's word the question must hold (not "a", "of")


def is_resume(event: AgentEvent) -> bool:
    return event.type is EventType.USER_INPUT and (
        event.metadata.get(_EVENT) == "resume" or event.metadata.get("resume") is True
    )


def is_interrupt(event: AgentEvent) -> bool:
    return event.type is EventType.CHECKPOINT and event.metadata.get(_EVENT, "interrupt") == (
        "interrupt"
    )


def answers(events: list[AgentEvent]) -> Iterator[tuple[int, AgentEvent, AgentEvent]]:
    """Each resume with the interrupt it answers: (its position, it, the interrupt)."""
    asked: AgentEvent | None = None
    for at, event in enumerate(events):
        if is_interrupt(event):
            asked = event
        elif asked is not None and is_resume(event):
            yield at, event, asked


def rejection(value: Any) -> bool:
    """A resume answer that declines and says nothing else to act on."""
    if value is False:
        return True
    if isinstance(value, str):
        return bool(_NO.match(value)) or (
            bool(_NO_BECAUSE.match(value)) and not _ALTERNATIVE.search(value)
        )
    if isinstance(value, list) and len(value) == 1:
        return rejection(value[0])
    if isinstance(value, dict):
        if "decisions" in value and len(value) == 1:
            decisions = value["decisions"]
            return (
                isinstance(decisions, list) and bool(decisions) and all(map(rejection, decisions))
            )
        extra = set(value) - set(_VERDICT_KEYS) - set(_TYPE_KEYS)
        if extra:
            return False  # (a message, an edit, a reason: something to act on)
        verdicts = [value[k] for k in _VERDICT_KEYS if k in value]
        kinds = [str(value[k]).lower() for k in _TYPE_KEYS if k in value]
        return (
            bool(verdicts or kinds)
            and all(v is False for v in verdicts)
            and all(k in _REJECT_TYPES for k in kinds)
        )
    return False


# a tool name's first word that says only "do it" (``issue_refund``, ``process_payment``):
# the question names the thing done
_DOING = frozenset(
    ["issue", "make", "run", "perform", "execute", "process", "handle", "trigger", "submit"]
)


# a question's verbs that ask to undo or put off the thing, not to do it
_UNDOING = frozenset(
    [
        "cancel",
        "skip",
        "hold",
        "stop",
        "reverse",
        "discard",
        "deny",
        "undo",
        "delay",
        "reject",
        "block",
        "void",
        "revoke",
        "postpone",
        "pause",
        "refuse",
        "drop",
        "remove",
        "delete",
        "withdraw",
    ]
)


def _words(name: str) -> list[str]:
    """A name's words: ``issue_refund`` and ``issueRefund`` are "issue", "refund"."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return _WORD.findall(spaced.lower())


def _named(name: str | None, question: set[str], *, tool: bool = False) -> bool:
    """The question names ``name``: as one word, or each of its words of three
    letters or more ("issue_refund" in "Issue a refund of $42?"; not "report_issue");
    for a tool, a first word that only says "do it" left out where the question asks
    for no other action on the thing ("Approve the refund proposed above?" names
    ``issue_refund``, "the payment" ``process_payment``; "Cancel the payment?" does
    not: its "no" keeps the payment)."""
    if not name:
        return False
    words = _words(name)
    long = [w for w in words if len(w) >= MIN_WORD]
    if tool and len(long) > 1 and long[0] in _DOING and not question & _UNDOING:
        long = long[1:]
    return "".join(words) in question or (bool(long) and all(w in question for w in long))


def _question(value: Any) -> tuple[str, frozenset[str] | None]:
    """What an interrupt asked, as text (a string, or a dict's question-like fields:
    not its data, a draft or a call's arguments, whose words name nothing asked),
    and the exact actions it asks about where it lists them
    (``HumanInTheLoopMiddleware``'s ``action_requests``), else None."""
    texts: list[str] = []
    names: set[str] = set()
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict):
            requests = item.get("action_requests")
            if isinstance(requests, list):
                names |= {
                    r["name"]
                    for r in requests
                    if isinstance(r, dict) and isinstance(r.get("name"), str)
                }
                continue
            texts += [item[k] for k in _QUESTION_KEYS if isinstance(item.get(k), str)]
    return "\n".join(texts), frozenset(names) if names else None


# a word before a done form that says it is not done, put off or a condition ("not
# published", "never sent", "will be published once approved", "to be refunded")
_NEGATED = re.compile(
    r"\b(?:not|never|no|nor|without|un|will|would|shall|should|can|could|may|might|must|"
    r"once|after|until|unless|if|when|pending|awaiting|to be|to)\W*(?:\w+\W+){0,2}$|"
    r"n't\W*$|'ll\W*$",
    re.I,
)
_THEN_NO = re.compile(r"^\W*(?:no|false|none|pending|failed)\b", re.I)  # ("Published: no")
# a status that says an action went through, whatever it was ("charge": "succeeded")
_WENT_THROUGH = re.compile(
    r"\b(?:succeeded|successful|success|completed?|done|processed|issued|sent|posted|live)\b",
    re.I,
)
_STATUS_KEYS = frozenset({"status", "state", "result", "outcome"})
_NO_VALUES = frozenset({"no", "false", "none", "n", "0", "pending", "skipped"})


def _says_done(update: Any, node: str) -> bool:
    """A node's update that says it did what its name says, the declined thing: a
    field named by it set true (``published: True``, ``email_sent: True``), a done
    form of a word of its name in a text, not said as not done, put off or made a
    condition ("published"; not "not published", "unpublished", "to be published
    once approved", "Published: no"), or a status that it went through ("status":
    "succeeded"). A field named by it set false (``published: False``) says it was
    not done, whatever else the update says; an empty update, a draft kept, nothing."""
    words = [w for w in _words(node) if len(w) >= MIN_WORD]
    if not words or not update:
        return False
    form = re.compile(rf"(?<![a-z])(?:{'|'.join(done_form(w) for w in words)})(?![a-z])", re.I)
    named = re.compile(rf"(?<![a-z])(?:{'|'.join(words)}|{form.pattern})(?![a-z])", re.I)
    done = False
    for key, value in _fields(update):
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
        if key and named.search(spaced):  # a field named by the action
            if value is False or value is None or str(value).strip().lower() in _NO_VALUES:
                return False
            if value is True:
                done = True
                continue
        if not isinstance(value, str):
            continue
        for m in form.finditer(value):
            if not _NEGATED.search(value[max(0, m.start() - 40) : m.start()]) and not (
                _THEN_NO.search(value[m.end() :])
            ):
                done = True
        went = _WENT_THROUGH.search(value) if key.lower() in _STATUS_KEYS else None
        if went is not None and not _NEGATED.search(value[: went.start()]):
            done = True
    return done


def _fields(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """The (key, value) pairs of an update, nested ones too (a list's items under
    its key); a text alone under no key."""
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _fields(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value[:50]:
            yield from _fields(item, key, depth + 1)
    else:
        yield key, value


def _records_no(event: AgentEvent) -> bool:
    """A node's update that writes the answer down as a rejection: a verdict field
    (``approved``, ``accepted``...) set to False."""
    out = event.output
    return (
        event.type is EventType.AGENT_END
        and isinstance(out, dict)
        and any(out.get(k) is False for k in _VERDICT_KEYS)
    )


def _update_of(events: list[AgentEvent], at: int, start: AgentEvent) -> AgentEvent | None:
    """The update (its ``AGENT_END``) of the node run that starts at ``at``."""
    return next(
        (e for e in events[at + 1 :] if e.type is EventType.AGENT_END and e.parent_id == start.id),
        None,
    )


def rule_rejection_overruled(ctx: RuleContext) -> Iterator[Finding]:
    """A plain rejection at an interrupt, then the action the question named, in a
    failed run."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    for at, resume in enumerate(events):
        if not is_resume(resume) or not rejection(resume.input):
            continue
        asked = next((e for e in reversed(events[:at]) if is_interrupt(e)), None)
        if asked is None:
            continue
        question_text, listed = _question(asked.output)
        if listed is None and (not question_text or _OPEN.search(question_text)):
            continue  # (nothing asked in words, or "any changes?", whose "no" goes ahead)
        question = set(_WORD.findall(question_text.lower()))
        asker = asked.agent_name
        action: AgentEvent | None = None
        for event in events[at + 1 :]:
            if is_interrupt(event):
                break  # (a new question: what follows answers that one)
            if (
                event.type is EventType.TOOL_CALL
                # (not the paused call run again to resume, nor an answer a node wrote
                # for a call without running it: the rejection's own record)
                and not event.metadata.get(RESUMES)
                and event.metadata.get(RECORDED_FROM) != "node_update"
                and (
                    tool_name(event) in listed
                    if listed is not None
                    else _named(tool_name(event), question, tool=True)
                )
            ):
                action = event
                break
            if (
                listed is None
                and event.type is EventType.AGENT_START
                and event.agent_name != asker
                and _named(event.agent_name, question)
            ):
                action = event
                break
        if action is None:
            continue
        later = events[at + 1 : ctx.position[action.id]]
        own = [e for e in later if e.agent_name == asker and e.type is not EventType.ERROR]
        blamed: AgentEvent | None = own[-1] if own else None  # (routed past the answer)
        if action.type is EventType.AGENT_START and any(_records_no(e) for e in own):
            # the asker wrote the "no" down (approved=False) and a plain edge ran the
            # node: a fault only if that node did what was declined all the same
            done = _update_of(events, ctx.position[action.id], action)
            if done is None or not _says_done(done.output, action.agent_name or ""):
                continue
            blamed = done
        if action.type is EventType.TOOL_CALL:
            did = f"called {tool_name(action)} at step {action.step_index}"
            if action.step_index > resume.step_index:
                blamed = action  # (asked after the answer: filed under the model call)
            else:  # (the declined call itself, filed under the model call that asked)
                did = (
                    f"ran the declined {tool_name(action)} call (asked at step {action.step_index})"
                )
        elif blamed is not None and blamed.agent_name == action.agent_name:
            did = (
                f"ran {action.agent_name} at step {action.step_index}, which did it though "
                "the answer was written down as a rejection"
            )
        else:
            did = f"ran {action.agent_name} at step {action.step_index}"
        if blamed is None:
            continue
        said = shorten(flatten(resume.input, limit=200), 60)
        asked_what = shorten(question_text or f"run {', '.join(sorted(listed or ()))}", 100)
        who = blamed.agent_name or "the agent"
        yield rule_finding(
            RULE,
            "planning.instruction_noncompliance",
            blamed,
            f"the reviewer answered {said!r} to {asked_what!r} at step {resume.step_index}, "
            f"and the run {did}",
            confidence=0.8,
            evidence=[
                quoted(resume, "input", flatten(resume.input, limit=300)),
                quoted(asked, "output", (question_text or flatten(asked.output, limit=300))[:300]),
            ],
            metadata={
                "fix": (
                    f"At step {blamed.step_index}, {who}: the reviewer answered {said!r} to "
                    f"{asked_what!r}, and the run {did} all the same. Treat that answer as "
                    "a rejection: do not go on to what was declined"
                    + (
                        " (in code, a non-empty string such as 'no' is true: compare the "
                        "answer, do not test its truth)."
                        if isinstance(resume.input, str) and blamed is not action
                        else "."
                    )
                )
            },
        )
