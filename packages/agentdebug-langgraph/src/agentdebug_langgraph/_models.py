"""Chat-model and LLM events inside graph nodes (tool events: :mod:`._tools`).

A model call is one ``llm.response`` event, recorded when the model answers: the
prompt (only what the node's model had not seen in its previous call), the reply
with its tool calls, token usage as the model reported it. The tool calls it asks
for are noted (``GraphRun.tool_calls``, ``asked``), so that each is filed under it.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from agentdebug import EventType
from agentdebug.detect.cut_answers import CUT_REASONS
from langchain_core.messages import BaseMessage

from agentdebug_langgraph import _convert
from agentdebug_langgraph._state import NodeRun
from agentdebug_langgraph._tools import NO_ID, ToolEvents

_LLM_RESPONSE = EventType.LLM_RESPONSE
_CHAT_MODEL = "langchain.chat_model"
_clock = time.perf_counter


class ModelAndToolEvents(ToolEvents):
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
                said = getattr(msg, "response_metadata", None)
                if said:  # (cut at its token limit: the answer reads whole, and is not)
                    why = said.get("finish_reason") or said.get("stop_reason")
                    if why in CUT_REASONS:
                        meta["finish_reason"] = why
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
                        key = c["id"] or f"{NO_ID}{event_id}:{i}"
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
