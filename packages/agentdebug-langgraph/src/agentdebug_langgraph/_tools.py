"""Tool events inside graph nodes.

A tool call is filed under the model step that asked for it (matched by tool-call
id; a tool a node runs with the call's arguments alone, by tool and arguments), its
result under the node that ran it, so that attribution blames the decision, not the
tool node that carried it out.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from agentdebug import EventType
from agentdebug.detect.signals import RAN_IN, RETRY_OF
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.types import Command

from agentdebug_langgraph import _convert
from agentdebug_langgraph._base import CaptureBase
from agentdebug_langgraph._state import NodeRun


class ToolEvents(CaptureBase):
    """The tool half of :class:`~agentdebug_langgraph.AgentDebugCallback`."""

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            rec = self._node_for(parent_run_id, metadata)
            if rec is None:
                return
            tool = (serialized or {}).get("name") or kwargs.get("name") or "tool"
            call_id = kwargs.get("tool_call_id")
            run = rec.run
            matched = False
            if not call_id and run.asked:  # a node that runs the calls itself, by arguments
                call_id = _asked_for(run, rec.step, tool, inputs)
                matched = call_id is not None
            # The call belongs to the decision that asked for it: the model's step.
            decided = run.tool_calls.get(call_id) if call_id else None
            meta: dict[str, Any] = {"tool_name": tool}
            edited = None
            if decided is not None and call_id:
                edited = _edited(run.asked.get(call_id), inputs)
            if decided is not None and edited is None:
                parent, step, agent = decided
            else:
                parent, step, agent = rec.event_id, rec.step, rec.agent
            if edited is not None:  # a person changed the arguments (at an interrupt)
                meta.update(edited=True, asked_args=edited, asked_by=decided[0])  # type: ignore[index]
            if call_id:
                if not call_id.startswith(NO_ID):
                    meta["tool_call_id"] = call_id
                if matched:
                    meta["matched_by"] = "name and arguments"
                run.answered.add((call_id, decided[0] if decided is not None else parent))
            else:  # (a tool run no decision asked for: its node's ToolMessage may name it)
                run.unlabelled.setdefault(rec.event_id, []).append(tool)
            if decided is not None and rec.step != step:
                meta["executed_by"] = rec.agent
                meta["executed_step"] = rec.step
            if run.paused_calls and call_id:  # run again after an interrupt paused it
                paused = run.paused_calls.pop(call_id, None)
                if paused is not None:
                    meta["resumes"] = paused
            retried = None
            if run.tool_failures and call_id:  # run again in the node run after it failed
                retried = run.tool_failures.pop((call_id, parent, rec.event_id), None)
                if retried is not None:
                    meta["attempt"] = retried[1] + 1
            event_id = run.session.record(
                EventType.TOOL_CALL,
                agent_name=agent,
                step_index=step,
                input=inputs if inputs is not None else input_str,
                parent_id=parent,
                module=tool,
                metadata=meta,
            )
            # (under the model's step? the failed try it is a retry of)
            filed = (event_id, call_id, decided is not None, retried, parent)
            self._calls[run_id.int] = (rec, filed, time.perf_counter(), tool)
        except Exception:
            self._failed("on_tool_start")

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            call = self._calls.pop(run_id.int, None)
            if call is None:
                return
            rec, (call_event, call_id, decided, retried, _), started, tool = call
            error = None
            meta = _result_meta(rec, tool, call_id, decided, retried)
            # a tool returning Command(update=...) answers its call with the
            # ToolMessage in the update (InjectedToolCallId's use): its status counts
            answer = output
            if isinstance(output, (Command, list)):
                answer = _convert.answer_in(output, call_id)
                if isinstance(answer, dict):  # (a message dict: ToolNode makes it a message)
                    answer = ToolMessage(
                        content=answer.get("content") or "",
                        tool_call_id=str(answer.get("tool_call_id") or call_id or ""),
                        status="error" if answer.get("status") == "error" else "success",
                    )
            if isinstance(answer, ToolMessage):
                if answer.status == "error":
                    error = {"message": _convert.text_of(answer.content), "type": "ToolError"}
                if answer.tool_call_id:
                    meta["tool_call_id"] = answer.tool_call_id
            if isinstance(output, ToolMessage):
                result: Any = _convert.compact(output.content)
                if output.artifact is not None:  # (content_and_artifact: kept, not shown
                    meta["artifact"] = _convert.compact(output.artifact)  # to the model)
            elif isinstance(answer, ToolMessage) and answer is not output:
                # A Command that answers the call (a handoff): its result is that
                # answer; what else the update writes is state (a handoff's whole
                # history, say, whose old error messages are not this call's), kept
                # as where it goes and which keys it writes.
                result = _convert.compact(answer.content)
                meta["command"] = _convert.command_outline(output)
            else:
                result = _convert.compact(output)
            rec.run.session.record(
                EventType.TOOL_RESULT,
                agent_name=rec.agent,
                step_index=rec.step,
                output=result,
                error=error,
                parent_id=call_event,
                module=tool,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                metadata=meta,
            )
        except Exception:
            self._failed("on_tool_end")

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            call = self._calls.pop(run_id.int, None)
            if call is None:
                return
            rec, (call_event, call_id, decided, retried, asked_in), started, tool = call
            meta = _result_meta(rec, tool, call_id, decided, retried)
            if isinstance(error, GraphInterrupt):
                # Paused, not failed: the node records the interrupt's values, and a
                # resume runs the tool again from its start (a new call, which
                # names this one as the call it resumes).
                meta["langgraph_event"] = "tool_interrupted"
                rec.run.session.record(
                    EventType.CHECKPOINT,
                    agent_name=rec.agent,
                    step_index=rec.step,
                    parent_id=call_event,
                    module="langgraph.interrupt",
                    duration_ms=(time.perf_counter() - started) * 1000.0,
                    # (what it asked, as its node's interrupt event says it: shown)
                    output=[
                        _convert.compact(getattr(i, "value", i))
                        for i in _convert.interrupts_of(error)
                    ]
                    or None,
                    metadata=meta,
                )
                if call_id:
                    rec.run.paused_calls[call_id] = call_event
                return
            if isinstance(error, GraphBubbleUp):  # a Command raised in a tool
                return
            stopped = not isinstance(error, Exception)
            if stopped:  # not failed: a sibling call that raised made the tool node
                # cancel this one (asyncio.gather), or the caller stopped the run
                meta["stopped"] = f"the call was stopped ({type(error).__name__})"
            failed = rec.run.session.record(
                EventType.TOOL_RESULT,
                agent_name=rec.agent,
                step_index=rec.step,
                error=None if stopped else error,
                parent_id=call_event,
                module=tool,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                metadata=meta,
            )
            if call_id and not stopped:  # (the node may try it again)
                attempt = retried[1] + 1 if retried is not None else 1
                # (by the decision too: a node's own loop may see an id used again)
                rec.run.tool_failures[(call_id, asked_in, rec.event_id)] = (failed, attempt)
        except Exception:
            self._failed("on_tool_error")

    def _tool_messages(self, rec: NodeRun, said: Any) -> None:
        """Tool answers a node's update wrote for calls this run's model asked for,
        with no tool run (no tool callback) behind them: the prebuilt ``ToolNode``'s
        answer to a call of a tool that does not exist (``status="error"``, "... is
        not a valid tool"), or a node that runs tools itself. Each is recorded as a
        ``tool.call`` under the decision that asked for it and its ``tool.result``
        (an error when the message's status says so), ``recorded_from:
        "node_update"``; once, however often the message is written again."""
        run = rec.run
        seen = run.tool_messages
        for msg in said if said.__class__ is list else (said,):
            if msg.__class__ is not ToolMessage or id(msg) in seen:
                continue
            call_id = msg.tool_call_id
            asked = run.asked.get(call_id)
            decided = run.tool_calls.get(call_id)
            if asked is None or decided is None:
                continue
            seen[id(msg)] = msg  # (held: its id is not reused while listed)
            key = (call_id, decided[0])  # (a model may use an id again in a later turn)
            if key in run.answered:
                continue
            run.answered.add(key)
            tool = msg.name or asked.get("name") or "tool"
            ran = run.unlabelled.get(rec.event_id)
            if ran and tool in ran:  # this node ran it, calling the tool without the id
                ran.remove(tool)
                continue
            parent, step, agent = decided
            meta: dict[str, Any] = {
                "tool_name": tool,
                "tool_call_id": call_id,
                "recorded_from": "node_update",
            }
            if rec.step != step:
                meta["executed_by"], meta["executed_step"] = rec.agent, rec.step
            session = run.session
            call_event = session.record(
                EventType.TOOL_CALL,
                agent_name=agent,
                step_index=step,
                input=_convert.compact(asked.get("args")),
                parent_id=parent,
                module=tool,
                metadata=meta,
            )
            error = None
            if msg.status == "error":
                error = {"message": _convert.text_of(msg.content), "type": "ToolError"}
            session.record(
                EventType.TOOL_RESULT,
                agent_name=rec.agent,
                step_index=rec.step,
                output=_convert.compact(msg.content),
                error=error,
                parent_id=call_event,
                module=tool,
                metadata=_result_meta(rec, tool, call_id, True) | {"recorded_from": "node_update"},
            )


NO_ID = "\x00"  # starts the key of a tool call the model gave no id (never a real id)
_LOOK_BACK = 64  # the latest calls asked for that a tool run without an id is matched to


def _asked_for(run: Any, step: int, tool: str, inputs: Any) -> str | None:
    """The call a tool run without a call id carries out: a node that runs the
    model's calls itself (LangGraph's own tutorial: ``tool.invoke(call["args"])``),
    or a call the model gave no id. Among the latest calls asked for this tool with
    these very arguments, the one asked in the same node run (``step``: a ``Send``
    branch that asks its model and runs the tool, beside another doing the same),
    then one not answered yet (a later decision asking the same again), then one an
    interrupt paused (its resume), then the latest decision's first; one answered
    already is a run of it again (a resume, a ``RetryPolicy`` retry of the node, a
    retry after a failure). A call whose model has answered since (a node running
    the tool on its own, after the agent's loop is done) is none of these. None
    when no such call is among the latest."""
    if not isinstance(inputs, dict):
        return None
    found = decision = None
    best: tuple[bool, bool, bool] | None = None
    for n, (key, asked) in enumerate(reversed(run.asked.items())):
        if n >= _LOOK_BACK:
            break
        if asked.get("name") != tool or asked.get("args") != inputs:
            continue
        decided = run.tool_calls.get(key)
        if decided is None:
            continue
        said = run.answers.get(decided[2])  # (its model's latest answer without a call)
        if said is not None and said[1] > decided[1] != step:
            continue  # its model has answered since: a decision past, not this one's
        rank = (
            decided[1] == step,
            (key, decided[0]) not in run.answered,
            key in run.paused_calls,
        )
        # (latest first: of two alike, an earlier call of the same decision wins)
        if best is None or rank > best or (rank == best and decided[0] == decision):
            found, decision, best = key, decided[0], rank
    return found


def _result_meta(
    rec: NodeRun, tool: str, call_id: Any, decided: bool, retried: tuple[Any, int] | None = None
) -> dict[str, Any]:
    """A tool result's metadata. A result filed under the model step that asked for
    the call (``decided``) names the node run that ran it (``ran_in``), so an error
    a ``RetryPolicy`` attempt of that node got past is known as resolved; the result
    of a call the node ran again after it failed (``ToolRetryMiddleware``, a
    ``with_retry`` tool) names the failed result (``retry_of``), so that error is
    resolved when this one is not an error."""
    meta: dict[str, Any] = {"tool_name": tool}
    if call_id and not call_id.startswith(NO_ID):
        meta["tool_call_id"] = call_id
    if decided:
        meta[RAN_IN] = rec.event_id
    if retried is not None:
        meta[RETRY_OF], meta["attempt"] = retried[0], retried[1] + 1
    return meta


_MISSING = object()


def _edited(asked: dict[str, Any] | None, inputs: Any) -> Any:
    """The arguments the model asked for, when the call runs with others (a person
    edited them at an interrupt: ``update_state`` on the model's message, or a
    ``HumanInTheLoopMiddleware`` edit), else None. Only the model's own arguments
    are compared: a tool node adds injected ones (state, the call's id)."""
    args = asked.get("args") if asked is not None else None
    if not isinstance(args, dict) or not args or not isinstance(inputs, dict):
        return None
    if all(inputs.get(key, _MISSING) == value for key, value in args.items()):
        return None
    return _convert.compact(args)
