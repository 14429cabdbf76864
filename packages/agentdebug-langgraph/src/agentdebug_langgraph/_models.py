"""Chat-model, LLM and tool events inside graph nodes.

A model call is one ``llm.response`` event, recorded when the model answers: the
prompt (only what the node's model had not seen in its previous call), the reply
with its tool calls, token usage as the model reported it. A tool call is filed
under the model step that asked for it (matched by tool-call id; a tool a node
runs with the call's arguments alone, by tool and arguments), its result
under the node that ran it, so that attribution blames the decision, not the
tool node that carried it out.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from agentdebug import EventType
from agentdebug.detect.signals import RAN_IN, RETRY_OF
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.types import Command

from agentdebug_langgraph import _convert
from agentdebug_langgraph._base import CaptureBase
from agentdebug_langgraph._state import NodeRun

_LLM_RESPONSE = EventType.LLM_RESPONSE
_CHAT_MODEL = "langchain.chat_model"
_clock = time.perf_counter


class ModelAndToolEvents(CaptureBase):
    """The model and tool half of :class:`~agentdebug_langgraph.AgentDebugCallback`."""

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:  # (_begin_call written out: every graph step that calls a model comes here)
            rec = self._nodes.get(parent_run_id.int) if parent_run_id is not None else None
            if rec is None:  # not called by the node itself: a runnable inside it
                rec = self._node_for(None, metadata)
                if rec is None:
                    return
            prompt = messages[0] if len(messages) == 1 else [m for batch in messages for m in batch]
            self._calls[run_id.int] = (rec, prompt, _clock(), _model_name(metadata, kwargs))
        except Exception:
            self._failed("on_chat_model_start")

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._begin_call(run_id, parent_run_id, metadata, kwargs, list(prompts))
        except Exception:
            self._failed("on_llm_start")

    def _begin_call(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
        prompt: list[Any],
    ) -> None:
        """Remember a model call made inside a node, until its answer comes."""
        rec = self._node_for(parent_run_id, metadata)
        if rec is not None:
            self._calls[run_id.int] = (rec, prompt, _clock(), _model_name(metadata, kwargs))

    def _prompt(self, rec: NodeRun, prompt: list[Any], meta: dict[str, Any]) -> list[Any]:
        """The part of the prompt this node's model has not seen in its previous call.

        A graph agent sends its whole history every turn; recording it every turn
        costs time on the graph's thread and space quadratic in the run's length.
        So each call records only the messages added since the node's previous
        call (all of them on the first call, or when the history was rewritten);
        when it records a part, ``metadata`` says how long the prompt was
        (``prompt_messages``) and where the new part starts (``prompt_new_from``).
        The messages are made small as the event is encoded
        (:func:`agentdebug_langgraph._convert.to_json`).
        """
        prompts = rec.run.prompts
        agent = rec.agent
        seen = prompts.get(agent)
        n = len(prompt)
        prompts[agent] = prompt if n else None
        if seen is not None:
            k = len(seen)
            # its last message the very same, and all of it unchanged (compared in C:
            # the same objects at once, a rebuilt one by its fields), not just its
            # ends: a node may rewrite an earlier message in place (add_messages by
            # id), and the record must not say the model saw the old one
            if 0 < k <= n and prompt[k - 1] is seen[-1] and prompt[:k] == seen:
                meta["prompt_messages"] = n
                meta["prompt_new_from"] = k
                return prompt[k:]
        return prompt

    def on_llm_new_token(
        self,
        token: Any,
        *,
        chunk: Any = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """A streamed model call's chunk, kept until the call ends: a node that
        stops reading the stream, or a run stopped meanwhile, leaves what the model
        had said by then recorded (:meth:`_stopped_call`)."""
        try:
            key = run_id.int
            if chunk is not None and key in self._calls:
                got = self._streamed.get(key)
                if got is None:
                    self._streamed[key] = [chunk]
                else:
                    got.append(chunk)
        except Exception:
            self._failed("on_llm_new_token")

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            call = self._calls.pop(run_id.int, None)
            if call is None:
                return
            if self._streamed:
                self._streamed.pop(run_id.int, None)
            rec, prompt, started, model = call
            try:
                gen = response.generations[0][0]
            except (IndexError, TypeError):
                gen = None
            msg = getattr(gen, "message", None)
            meta: dict[str, Any] = {"model": model} if model else {}
            if msg is not None:
                output: Any = _convert.message(msg)
                used = getattr(msg, "usage_metadata", None)
                if used:
                    meta["usage"] = _convert.usage_counts(used)
            else:
                output = {"role": "assistant", "content": getattr(gen, "text", "")}
            if "usage" not in meta and response.llm_output:
                token_usage = response.llm_output.get("token_usage")
                if token_usage:
                    meta["usage"] = dict(token_usage)
            if rec.run.failed_calls:  # another try of a call that failed in this node run
                _retried_call(rec, prompt, started, meta)
            agent = rec.agent
            event_id = rec.run.emit(
                {
                    "id": None,
                    "type": _LLM_RESPONSE,
                    "step_index": rec.step,
                    "timestamp": None,
                    "agent_name": agent,
                    "module": _CHAT_MODEL,
                    "parent_id": rec.event_id,
                    "duration_ms": (_clock() - started) * 1000.0,
                    "input": self._prompt(rec, prompt, meta),
                    "output": output,
                    "metadata": meta,
                },
                agent,
            )
            if msg is not None and output["role"] == "assistant":  # an AIMessage or a chunk
                calls = output.get("tool_calls")
                if calls:
                    tool_calls, asked = rec.run.tool_calls, rec.run.asked
                    for i, c in enumerate(calls):
                        # (a call the model gave no id is known by its decision and place)
                        key = c["id"] or f"{_NO_ID}{event_id}:{i}"
                        tool_calls[key] = (event_id, rec.step, agent)
                        asked[key] = c
                else:
                    rec.run.answers[agent] = (msg, rec.step, event_id, started)
                if "invalid_tool_calls" in output:
                    self._invalid_calls(rec, output["invalid_tool_calls"], event_id)
        except Exception:
            self._failed("on_llm_end")

    def _invalid_calls(self, rec: NodeRun, calls: list[dict[str, Any]], decision: Any) -> None:
        """Tool calls whose arguments did not parse (LangChain's
        ``invalid_tool_calls``: the model's raw text, cut off or not JSON): no tool
        runs them and ``tools_condition`` sees none, so each is a ``tool.call`` under
        the decision, with the raw arguments and ``arguments_error``, for the
        malformed-call rule to find."""
        for c in calls:
            tool = c.get("name") or "tool"
            meta: dict[str, Any] = {
                "tool_name": tool,
                "arguments_error": c.get("error") or _args_problem(c.get("args")),
                "recorded_from": "invalid_tool_calls",
            }
            if c.get("id"):
                meta["tool_call_id"] = c["id"]
            rec.run.session.record(
                EventType.TOOL_CALL,
                agent_name=rec.agent,
                step_index=rec.step,
                input=c.get("args"),
                parent_id=decision,
                module=tool,
                metadata=meta,
            )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            call = self._calls.pop(run_id.int, None)
            if call is None:
                return
            if not isinstance(error, Exception):  # not the model's failure: a stop
                why = (
                    "the caller stopped reading the stream"  # (async: once the loop closed it)
                    if isinstance(error, GeneratorExit)
                    else f"the call was stopped ({type(error).__name__})"
                )
                self._stopped_call(run_id.int, call, why)
                return
            rec, prompt, started, model = call
            meta: dict[str, Any] = {"model": model} if model else {}
            if rec.run.failed_calls:  # a retry that failed too: one link of the chain
                _retried_call(rec, prompt, started, meta)
            failed, _ = self._unanswered(run_id.int, call, meta, error)
            rec.run.failed_calls[rec.event_id] = (failed, _clock(), prompt)
        except Exception:
            self._failed("on_llm_error")

    def _unanswered(
        self,
        key: int,
        call: tuple[NodeRun, Any, float, Any],
        meta: dict[str, Any],
        error: BaseException | None,
    ) -> tuple[str | None, Any]:
        """The ``llm.response`` of a call that ended without an answer (failed or
        stopped), with what it had streamed by then as its reply: its event id,
        and that reply (a message), if any."""
        rec, prompt, started, _ = call
        said = _joined(self._streamed.pop(key, None))
        event_id = rec.run.session.record(
            EventType.LLM_RESPONSE,
            agent_name=rec.agent,
            step_index=rec.step,
            input=_convert.compact(self._prompt(rec, prompt, meta)),
            output=_convert.message(said) if said is not None else None,
            error=error,
            parent_id=rec.event_id,
            module=_CHAT_MODEL,
            duration_ms=(_clock() - started) * 1000.0,
            metadata=meta,
        )
        return event_id, said

    def _stopped_call(self, key: int, call: tuple[NodeRun, Any, float, Any], why: str) -> None:
        """A model call that will not answer (its stream left unread, the call
        cancelled, its run over): an ``llm.response`` without an error, ``stopped``
        saying why, with what the stream had given by then as its reply. That reply
        is the agent's latest answer (the final answer's author) unless a call that
        started later answered: a node that left a stream open and made another call
        closes the stream only as it returns, and a stream closed late (by the event
        loop, at the run's end) may be an earlier step's."""
        rec, _, started, model = call
        meta: dict[str, Any] = {"model": model} if model else {}
        meta["stopped"] = why
        event_id, said = self._unanswered(key, call, meta, None)
        if said is not None and not getattr(said, "tool_calls", None):
            answers = rec.run.answers
            before = answers.get(rec.agent)  # (recorded late, maybe: the latest call wins)
            if before is None or (before[1], before[3]) < (rec.step, started):
                answers[rec.agent] = (said, rec.step, event_id, started)

    # -- tools ---------------------------------------------------------------------------------

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
            if decided is not None:
                parent, step, agent = decided
            else:
                parent, step, agent = rec.event_id, rec.step, rec.agent
            meta: dict[str, Any] = {"tool_name": tool}
            if call_id:
                if not call_id.startswith(_NO_ID):
                    meta["tool_call_id"] = call_id
                if matched:
                    meta["matched_by"] = "name and arguments"
                run.answered.add((call_id, parent))
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
                    metadata=meta,
                )
                if call_id:
                    rec.run.paused_calls[call_id] = call_event
                return
            if isinstance(error, GraphBubbleUp):  # a Command raised in a tool
                return
            failed = rec.run.session.record(
                EventType.TOOL_RESULT,
                agent_name=rec.agent,
                step_index=rec.step,
                error=error,
                parent_id=call_event,
                module=tool,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                metadata=meta,
            )
            if call_id and isinstance(error, Exception):  # (the node may try it again)
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


# -- helpers --------------------------------------------------------------------------------


def _retried_call(rec: NodeRun, prompt: Any, started: float, meta: dict[str, Any]) -> None:
    """A model call given the same messages as a call of the same node run that
    failed, and started after it: ``with_retry`` trying again, a ``with_fallbacks``
    model, the node's own retry loop, also of a ``prompt | model`` chain (each try
    its own chain run). It names the failed call (``retry_of``, core's
    convention): an answer resolves that error (and, a retry that failed too being
    named so, every one before it), not blamed as left standing. Another call of
    the node with other messages (a router after a planner that failed) is not a
    retry; a call with the very same messages in another of the node's parallel
    tools, started after the failure, is taken for one."""
    failed = rec.run.failed_calls.get(rec.event_id)
    if failed is None or started < failed[1]:
        return
    before = failed[2]
    if before is not prompt and (len(before) != len(prompt) or before != prompt):
        return
    rec.run.failed_calls.pop(rec.event_id, None)  # (pop: calls in parallel tools race)
    meta["retry_of"] = failed[0]


def _args_problem(args: Any) -> str:
    """Why a call's raw arguments are not a JSON object (LangChain leaves its
    ``error`` empty for arguments streamed in chunks)."""
    if not isinstance(args, str):
        return "no arguments" if args is None else "the arguments are not text"
    try:
        parsed = json.loads(args)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return "not a JSON object" if not isinstance(parsed, dict) else "rejected by LangChain"


_NO_ID = "\x00"  # starts the key of a tool call the model gave no id (never a real id)
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
    if call_id and not call_id.startswith(_NO_ID):
        meta["tool_call_id"] = call_id
    if decided:
        meta[RAN_IN] = rec.event_id
    if retried is not None:
        meta[RETRY_OF], meta["attempt"] = retried[0], retried[1] + 1
    return meta


def _joined(chunks: list[Any] | None) -> Any:
    """The message a stream's chunks add up to (LangChain's chunk addition joins
    text and tool-call chunks), or None."""
    messages: list[Any] = [getattr(c, "message", None) for c in chunks or ()]
    messages = [m for m in messages if _convert.is_message(m)]
    if not messages:
        return None
    joined = messages[0]
    for m in messages[1:]:
        joined = joined + m
    return joined


def _model_name(md: dict[str, Any] | None, kwargs: dict[str, Any]) -> Any:
    params = kwargs.get("invocation_params") or {}
    return (
        params.get("model")
        or params.get("model_name")
        or (md or {}).get("ls_model_name")
        or params.get("_type")
    )
