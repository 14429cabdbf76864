"""The rule pack: deterministic detectors that make no model call.

Each rule reads only the fields where its signal lives. The malformed-tool-call
rule reads tool-call arguments and tool errors, never the user's prompt, so a task
that says "return JSON" is not a format error; error rules read error fields and
tool outputs, never the agent's own prose about errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from agentdebug.detect.claimed import CLAIMED, claimed, sentence, world_refused
from agentdebug.detect.invented import COVERS
from agentdebug.detect.recovery import recovered_by_the_agent
from agentdebug.detect.rule_finding import quoted
from agentdebug.detect.rule_finding import rule_finding as _finding
from agentdebug.detect.signals import (
    ACTION_TYPES,
    BY_THE_RUN,
    DECISION_TYPES,
    ENDED_ITSELF,
    ERROR_ACK,
    ERROR_OR_REFUSAL,
    HANDLES,
    RESULT_TYPES,
    SPEECH_TYPES,
    SUB_RUN,
    SUB_RUN_FAILED,
    failure_of,
    handoff_target,
    resolved_by_retry,
    tool_name,
)
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Evidence, Finding, Severity
from agentdebug.text import clip, compact_json, flatten, shorten

_SUCCESS_CLAIM = re.compile(
    r"\b(?:successfully|succeeded|task (?:is )?(?:complete|completed|done|finished|solved)|"
    r"all done|has been (?:completed|resolved|fixed)|works? (?:now|correctly|as expected)|"
    r"executed without (?:any )?(?:errors?|issues?)|no errors?)\b|\bTERMINATE\b",
    re.I,
)
_EMPTY_ANSWERS = {"", "none", "null", "n/a", "na", "undefined", "[]", "{}", "nan", "-"}
_INVALID_ANSWER = re.compile(
    r"^\s*(?:Error\b|Traceback|Exception\b|I(?:'m| am) sorry|I (?:cannot|can't|could not|"
    r"couldn't|was unable|am unable))",
    re.I,
)


def _norm_agent(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_T = TypeVar("_T")


@dataclass
class RuleContext:
    """What several rules need, computed once per trajectory."""

    trajectory: AgentTrajectory
    failures: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (mode, quote)
    position: dict[str, int] = field(default_factory=dict)  # id -> index in events
    # failure id -> the start of the later attempt that did the work without failing
    retried: dict[str, AgentEvent] = field(default_factory=dict)
    # failed tool result id -> the agent's own later call that succeeded in its place
    recovered: dict[str, AgentEvent] = field(default_factory=dict)
    # what one rule read that another uses too (by the reading's name): see ``once``
    shared: dict[str, Any] = field(default_factory=dict)

    def once(self, name: str, read: Callable[[], _T]) -> _T:
        """``read()``, computed once per trajectory under ``name``: a reading one rule
        makes and another rule defers to (``value_made_in_code`` leaves a total to
        ``total_of_dropped_rows`` when that rule explains it)."""
        if name not in self.shared:
            self.shared[name] = read()
        found: _T = self.shared[name]
        return found

    @classmethod
    def build(cls, trajectory: AgentTrajectory) -> RuleContext:
        ctx = cls(trajectory)
        ctx.position = {e.id: i for i, e in enumerate(trajectory.events)}
        for event in trajectory.events:
            failure = failure_of(event)
            if failure is not None:
                ctx.failures[event.id] = failure
        ctx.retried = resolved_by_retry(trajectory.events, ctx.failures)
        ctx.recovered = recovered_by_the_agent(trajectory.events, ctx.failures, ctx.retried)
        return ctx


def _failure_evidence(ctx: RuleContext, event: AgentEvent) -> Evidence:
    """The evidence of a failing event: its error, or the failure in its output."""
    return quoted(event, "error" if event.error else "output", clip(ctx.failures[event.id][1], 300))


@dataclass(frozen=True)
class Rule:
    id: str
    description: str
    check: Callable[[RuleContext], Iterable[Finding]]


# -- the rules ---------------------------------------------------------------------


def rule_errors(ctx: RuleContext) -> Iterator[Finding]:
    """Tool, model and runtime errors, classified by their text."""
    for event in ctx.trajectory.events:
        failure = ctx.failures.get(event.id)
        if failure is None:
            continue
        mode, quote = failure
        where = tool_name(event)
        if (
            event.type is EventType.ERROR
            and where == event.module
            and not event.metadata.get("tool_name")
        ):  # (an agent's own code raised: its module, "langgraph.node", is no tool)
            where = None
        if where:
            what = f"{where} failed"
            quote = _with_kind(event, quote)  # ("KeyError: 'Tokyo'", not "'Tokyo'")
        elif event.type is EventType.ERROR and event.metadata.get(SUB_RUN):
            # the task a sub-agent was given came back failed: its reason as it gave
            # it ("writer's run r1 failed: no sources found"), or what it raised
            what = f"{event.agent_name or 'a sub-agent'}'s run {event.metadata[SUB_RUN]} failed"
            quote = _with_kind(event, quote)
        elif event.type is EventType.ERROR and event.metadata.get(ENDED_ITSELF):
            # (no exception: the agent stopped at its limit, and said so)
            what = f"{event.agent_name or 'the run'} stopped"
        elif event.type is EventType.ERROR:  # an agent's own code raised: say whose, and what
            own = "the run's own code" if event.metadata.get(BY_THE_RUN) else "the run"
            what = f"{event.agent_name or own} raised"
            quote = _with_kind(event, quote)
        else:
            what = f"{event.type.value} failed"
        message = f"{what}: {shorten(quote, 120)}"
        confidence = 0.9 if event.error is not None else 0.7
        severity = Severity.ERROR
        retry = ctx.retried.get(event.id)
        if retry is not None:  # it happened, and the framework's retry got past it
            attempt = retry.metadata.get("attempt")
            which = f"attempt {attempt}" if isinstance(attempt, int) else "a retry"
            done = "succeeded"
            if retry.metadata.get(HANDLES):
                which, done = f"its error handler {retry.agent_name or ''}".rstrip(), "finished"
            message += f" (resolved: {which} at step {retry.step_index} {done})"
            confidence, severity = round(confidence * 0.3, 3), Severity.INFO
        elif event.id in ctx.recovered:  # the agent called again, and that call worked
            again = ctx.recovered[event.id]
            sub_run = again.metadata.get(SUB_RUN)
            what = (
                f"{again.agent_name}'s run {sub_run}"
                if sub_run
                else f"the agent's call of {tool_name(again)}"
            )
            message += f" (resolved: {what} at step {again.step_index} succeeded)"
            confidence, severity = round(confidence * 0.3, 3), Severity.INFO
        yield _finding(
            "errors",
            mode,
            event,
            message,
            confidence=confidence,
            severity=severity,
            evidence=[_failure_evidence(ctx, event)],
        )


def _actor(event: AgentEvent) -> str:
    """Who did ``event``: its agent, the run's own code, or "the agent"."""
    if event.agent_name:
        return event.agent_name
    return "the run's own code" if event.metadata.get(BY_THE_RUN) else "the agent"


def _with_kind(event: AgentEvent, quote: str) -> str:
    """An exception's message with its type before it (``ValueError: bad config``);
    a failure a sub-run declared has no type worth saying."""
    kind = event.error.type if event.error is not None else None
    if kind and kind != SUB_RUN_FAILED and not quote.startswith(kind):
        return f"{kind}: {quote}"
    return quote


def rule_malformed_tool_call(ctx: RuleContext) -> Iterator[Finding]:
    """Tool-call arguments that do not parse. Reads tool-call inputs only."""
    for event in ctx.trajectory.events:
        if event.type is not EventType.TOOL_CALL:
            continue
        problem = event.metadata.get("arguments_error")
        raw = event.input
        if problem is None and isinstance(raw, str) and raw.lstrip()[:1] in ("{", "["):
            try:
                orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                problem = str(exc)
        if problem is None and isinstance(raw, dict) and isinstance(raw.get("arguments"), str):
            args = raw["arguments"]
            try:
                orjson.loads(args)
            except orjson.JSONDecodeError as exc:
                problem = str(exc)
                raw = args
        if problem:
            quote = raw if isinstance(raw, str) else compact_json(raw)
            yield _finding(
                "malformed_tool_call",
                "action.malformed_tool_call",
                event,
                f"arguments for {tool_name(event) or 'a tool'} do not parse: {shorten(str(problem), 100)}",
                confidence=0.9,
                evidence=[quoted(event, "input", clip(quote, 300))],
            )


def _action_key(event: AgentEvent) -> str | None:
    if event.type is EventType.TOOL_CALL:
        return f"tool:{tool_name(event)}:{compact_json(event.input)}"
    text = " ".join(flatten(event.output if event.output is not None else event.input).split())
    if len(text) < 12:  # "TERMINATE", "ok": short acknowledgements repeat legitimately
        return None
    return f"{event.type.value}:{text}"


def rule_repeated_action(ctx: RuleContext, *, min_repeats: int = 3) -> Iterator[Finding]:
    """The same agent repeating the same action with nothing new coming back."""
    by_agent: dict[str | None, list[AgentEvent]] = {}
    events = ctx.trajectory.events
    calling = {e.agent_name for e in events if e.type is EventType.TOOL_CALL}
    for event in events:
        if event.type in ACTION_TYPES and not (
            event.agent_name in calling and _asks_for_tools(event)
        ):
            by_agent.setdefault(event.agent_name, []).append(event)
    for actions in by_agent.values():
        run: list[AgentEvent] = []
        last_key: str | None = None
        for maybe in [*actions, None]:
            key = _action_key(maybe) if maybe is not None else None
            if maybe is not None and key is not None and key == last_key:
                run.append(maybe)
                continue
            if len(run) >= min_repeats and _no_progress(ctx, run):
                first_repeat = run[1]
                yield _finding(
                    "repeated_action",
                    "action.repeated_action",
                    first_repeat,
                    f"{first_repeat.agent_name or 'the agent'} repeated the same action "
                    f"{len(run)} times (steps {run[0].step_index}-{run[-1].step_index})",
                    confidence=min(0.95, 0.5 + 0.1 * len(run)),
                    evidence=[
                        Evidence(
                            event_id=e.id,
                            step_index=e.step_index,
                            field="input" if e.type is EventType.TOOL_CALL else "output",
                            quote=clip(
                                compact_json(e.input)
                                if e.type is EventType.TOOL_CALL
                                else flatten(e.output, limit=300),
                                300,
                            ),
                        )
                        for e in run[:3]
                    ],
                )
            run = [maybe] if (maybe is not None and key is not None) else []
            last_key = key


def _asks_for_tools(event: AgentEvent) -> bool:
    """A model's reply that asks for tool calls. Where its agent's calls are recorded
    as ``tool.call`` events, those are the actions: the reply, which differs by its
    calls' ids every time, would stand between two identical calls."""
    out = event.output
    return (
        event.type is EventType.LLM_RESPONSE
        and isinstance(out, dict)
        and bool(out.get("tool_calls"))
    )


def _no_progress(ctx: RuleContext, run: list[AgentEvent]) -> bool:
    """True when the results of the repeated actions bring nothing new: those between
    them and the last one's, up to the agent's next action (a status polled until it
    changes is progress)."""
    events = ctx.trajectory.events
    start, end = ctx.position[run[0].id], ctx.position[run[-1].id]
    agent = run[0].agent_name
    for i in range(end + 1, len(events)):  # (the last action's result: the first after it)
        if events[i].type in ACTION_TYPES and events[i].agent_name == agent:
            break
        if events[i].type in RESULT_TYPES:
            end = i
            break
    results = [
        compact_json(e.output) if e.error is None else f"error:{e.error.message}"
        for e in events[start : end + 1]
        if e.type in RESULT_TYPES
    ]
    return len(set(results)) <= 1


def _resolved(ctx: RuleContext, failed: AgentEvent, until: int) -> bool:
    """A later success of the same tool (or agent), a retry of the failed work
    that succeeded, or the agent's own corrected call, before position ``until``."""
    retry = ctx.retried.get(failed.id) or ctx.recovered.get(failed.id)
    if retry is not None and ctx.position[retry.id] < until:
        return True
    events = ctx.trajectory.events
    name = tool_name(failed)
    for event in events[ctx.position[failed.id] + 1 : until]:
        if event.type not in RESULT_TYPES or event.id in ctx.failures:
            continue
        if (name and tool_name(event) == name) or (
            not name and event.agent_name == failed.agent_name
        ):
            return True
    return False


def _claims_success(text: str) -> re.Match[str] | None:
    """A success claim that does not, nearby, admit a failure."""
    claim = _SUCCESS_CLAIM.search(text)
    if claim is None:
        return None
    window = text[max(0, claim.start() - 200) : claim.end() + 200]
    return None if ERROR_ACK.search(window) else claim


def rule_premature_success(ctx: RuleContext) -> Iterator[Finding]:
    """A final answer or success claim while an earlier error is still unresolved."""
    events = ctx.trajectory.events
    claim_at = None
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if event.type is EventType.FINAL_ANSWER:
            text = flatten(event.output, limit=4000)
            if ERROR_ACK.search(text) and not _claims_success(text):
                return  # the run reports its failure honestly
            claim_at = i
            break
        if event.type in SPEECH_TYPES and _claims_success(flatten(event.output, limit=4000)):
            claim_at = i
            break
    if claim_at is None:
        return
    claim = events[claim_at]
    unresolved = [
        e
        for e in events[:claim_at]
        if e.id in ctx.failures
        and not ctx.failures[e.id][0].startswith("planning.")
        and not _resolved(ctx, e, claim_at)
    ]
    if not unresolved:
        return
    first = unresolved[0]
    claim_text = flatten(claim.output, limit=4000)
    match = _SUCCESS_CLAIM.search(claim_text)
    quote = claim_text[max(0, match.start() - 60) : match.end() + 60] if match else claim_text[:200]
    yield _finding(
        "premature_success",
        "verification.premature_success",
        claim,
        f"declared done at step {claim.step_index} while the error at step {first.step_index} "
        f"({shorten(_with_kind(first, ctx.failures[first.id][1]), 80)}) was never resolved",
        confidence=0.75,
        evidence=[
            Evidence(
                event_id=claim.id, step_index=claim.step_index, field="output", quote=quote.strip()
            ),
            _failure_evidence(ctx, first),
        ],
    )


def rule_error_ignored(ctx: RuleContext) -> Iterator[Finding]:
    """An error result whose next reaction (the next decision) treats it as a success:
    a success word in its opening, or, anywhere in a reply that admits no failure,
    the failed tool's action said as done ("booked" after ``book_flight`` failed:
    see ``claimed.py``). Where the failure is the world's answer to the call (a card
    declined, a timeout, no such record), the finding covers it: the call was not
    the fault, the reply was."""
    events = ctx.trajectory.events
    succeeded: set[str] | None = None  # the tools whose results did not fail
    for i, event in enumerate(events):
        if event.id not in ctx.failures or event.type not in RESULT_TYPES | {EventType.ERROR}:
            continue
        if event.id in ctx.retried:
            continue  # the framework retried it: what follows is the retry's work
        follower = next((e for e in events[i + 1 : i + 4] if e.type in DECISION_TYPES), None)
        if follower is None or follower.type not in SPEECH_TYPES:
            continue  # nobody reacted, or the reaction was another action
        # Look only at the reply's opening: that is where it reacts to the result.
        head = flatten(follower.output, limit=6000)[:600]
        claim = _claims_success(head)
        said = head
        done = None
        if claim is None:
            if succeeded is None:
                succeeded = {
                    name
                    for e in events
                    if e.type in RESULT_TYPES and e.id not in ctx.failures
                    for name in [tool_name(e)]
                    if name
                }
            found = claimed(ctx, event, follower, succeeded)
            if found is None:
                continue
            claim = done = found[0]
            said = found[1]
        quote = said[max(0, claim.start() - 60) : claim.end() + 60].strip()
        if done is not None:
            quote = sentence(said, done)
        mode, error = ctx.failures[event.id]
        world = world_refused(ctx, event)
        own_fault = mode == "action.malformed_tool_call"
        message = (
            f"{_actor(follower)} treated the failed result at step {event.step_index} as a success"
        )
        metadata: dict[str, Any] = {}
        if done is not None:
            tool = tool_name(event) or "the tool"
            message = (
                f"{_actor(follower)} said {tool}'s action was done ({done.group()!r}) "
                f"after it failed at step {event.step_index}"
            )
            metadata["fix"] = (
                f"At step {follower.step_index}, {_actor(follower)}: the reply says it was done "
                f'("{quote}"), but {tool} failed at step {event.step_index} '
                f'("{shorten(error, 160)}"). Say that it failed and why, and what can be '
                "done next, instead of confirming it."
            )
        if world:
            metadata[COVERS] = event.id  # the call was right; the world said no
        elif done is not None and not own_fault:
            metadata[CLAIMED] = event.id  # (the call may have been right; the claim is not)
        yield _finding(
            "error_ignored",
            "observation.error_ignored",
            follower,
            message,
            # (a claim over the call's own fault is its consequence: the call comes first)
            confidence=0.6 if own_fault else 0.8 if done is not None else 0.7,
            evidence=[
                quoted(follower, "output", quote),
                _failure_evidence(ctx, event),
            ],
            metadata=metadata,
        )


def rule_unknown_handoff(ctx: RuleContext) -> Iterator[Finding]:
    """A handoff to an agent the run does not have."""
    traj = ctx.trajectory
    declared = {_norm_agent(a.name) for a in traj.agents}
    acting = {_norm_agent(e.agent_name) for e in traj.events if e.agent_name}
    known = declared | acting
    if not known:
        return
    for event in traj.events:
        if event.type is not EventType.HANDOFF:
            continue
        target = handoff_target(event)
        if target is None or _norm_agent(target) in known:
            continue
        yield _finding(
            "unknown_handoff",
            "coordination.unknown_handoff",
            event,
            f"handoff to '{target}', which is not an agent of this run "
            f"(agents: {', '.join(traj.agent_names()[:8])})",
            confidence=0.85 if declared else 0.55,
            evidence=[
                Evidence(
                    event_id=event.id, step_index=event.step_index, field="metadata", quote=target
                )
            ],
        )


def rule_invalid_final_output(ctx: RuleContext) -> Iterator[Finding]:
    """A final answer that is empty, a placeholder, or an error text."""
    for event in ctx.trajectory.events:
        if event.type is not EventType.FINAL_ANSWER:
            continue
        text = flatten(event.output, limit=4000).strip()
        if text.lower().strip(" .\"'") in _EMPTY_ANSWERS:
            yield _finding(
                "invalid_final_output",
                "verification.invalid_final_output",
                event,
                "the final answer is empty"
                if not text
                else f"the final answer is a placeholder ('{text}')",
                confidence=0.9,
                evidence=[quoted(event, "output", text or None)],
            )
        elif _INVALID_ANSWER.match(text):
            yield _finding(
                "invalid_final_output",
                "verification.invalid_final_output",
                event,
                f"the final answer is an error or a refusal: {shorten(text, 100)}",
                confidence=0.7,
                metadata={"answer": ERROR_OR_REFUSAL},
                evidence=[quoted(event, "output", text[:200])],
            )


_LEDGER_FLAG = re.compile(
    r'"(?P<key>is_progress_being_made|is_in_loop)"\s*:\s*\{\s*"reason"\s*:\s*"(?P<reason>(?:[^"\\]|\\.)*)"'
    r'\s*,\s*"answer"\s*:\s*(?P<answer>true|false)',
)


def rule_stall_reported(ctx: RuleContext) -> Iterator[Finding]:
    """An orchestrator's own progress ledger saying the run stalled or loops.

    Orchestrators such as Magentic-One write a ledger after every turn with
    ``is_progress_being_made`` and ``is_in_loop``. The first time it reports no
    progress (or a loop), the step that stalled is the last action by another
    agent just before that ledger; that step is what the finding points at.
    """
    events = ctx.trajectory.events
    for i, event in enumerate(events):
        if event.type not in (EventType.REASONING, EventType.PLAN):
            continue
        text = flatten(event.output, limit=20000)
        if "is_progress_being_made" not in text and "is_in_loop" not in text:
            continue
        flags = {m.group("key"): m for m in _LEDGER_FLAG.finditer(text)}
        loop = flags.get("is_in_loop")
        progress = flags.get("is_progress_being_made")
        looping = loop is not None and loop.group("answer") == "true"
        stalled = progress is not None and progress.group("answer") == "false"
        if not (looping or stalled):
            continue
        subject = next(
            (
                e
                for e in reversed(events[:i])
                if e.type in DECISION_TYPES and e.agent_name and e.agent_name != event.agent_name
            ),
            None,
        )
        if subject is None:
            continue
        flag = loop if looping else progress
        assert flag is not None
        yield _finding(
            "stall_reported",
            "action.repeated_action" if looping else "reflection.no_adaptation",
            subject,
            f"{event.agent_name or 'the orchestrator'} reported "
            f"{'a loop' if looping else 'no progress'} right after this step",
            confidence=0.5,
            evidence=[quoted(event, "output", flag.group("reason")[:300])],
        )
        return
