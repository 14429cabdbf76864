"""Who gave a run's final answer: the model call or the node run it is linked to."""

from __future__ import annotations

from typing import Any

from agentdebug_langgraph import _convert
from agentdebug_langgraph._state import GraphRun

STRUCTURED = "structured_response"  # the state key of an agent's response_format answer


def structured_by(run: GraphRun, wrote: Any) -> tuple[str | None, int, str | None]:
    """Who gave a structured response (``response_format``): the latest model call
    of the node run whose update wrote it (``create_agent``'s model node calling the
    schema as a tool; the prebuilt agent's ``generate_structured_response``), else
    that node run (a node of the user's that set it)."""
    agent, step, node_event = wrote
    for event_id, asked_at, by in reversed(list(run.tool_calls.values())):
        if asked_at == step and by == agent:
            return agent, step, event_id
    said = run.answers.get(agent)
    if said is not None and said[1] == step:
        return agent, step, said[2]
    return agent, step, node_event


def said_by_model(run: GraphRun, outputs: Any) -> bool:
    """Whether the final message is a model's answer (one a model call gave), not
    one a node wrote itself, as an agent ending at a limit does."""
    msg = _convert.last_ai_text(outputs, run.messages_key)[1]
    content = _content(msg)
    return msg is not None and any(
        given is msg or getattr(given, "content", None) == content
        for given, _, _, _ in run.answers.values()
    )


def answered_by(run: GraphRun, msg: Any) -> tuple[str | None, int, str | None]:
    """Who gave the final message: (agent, step, parent event id).

    Each node's latest model answer is kept; the final message is matched to one
    of them (the same object, else the same content: a streamed answer is joined
    from chunks into a new message), so that a model call made after the answer
    (a node checking it, say) does not take it. A message no model call gave
    belongs to the node whose update wrote it (a node that formats the reply, or
    writes a canned one), and to no one if no node seen wrote it. Without a final
    message, the latest answer is the parent."""
    answers = run.answers
    if msg is not None:
        content = _content(msg)
        same = [  # (the same object: a model that hands out one message object twice)
            (step, agent, event_id)
            for agent, (given, step, event_id, _) in answers.items()
            if given is msg
        ] or [
            (step, agent, event_id)
            for agent, (given, step, event_id, _) in answers.items()
            if _words(getattr(given, "content", None)) == _words(content)
        ]
        written = run.last_written
        if len(same) > 1 and written is not None and _same_message(written[0], msg):
            same = [entry for entry in same if entry[1] == written[1]] or same  # (the node
            # that put it in the messages: not another that wrote what it said elsewhere)
        if same:  # the latest of the calls that said it
            step, agent, event_id = max(same, key=lambda entry: entry[0])
            return agent, step, event_id
        if written is not None and _same_message(written[0], msg):
            return written[1], written[2], written[3]
        return None, run.last_step, run.input_event
    if not answers:
        return None, run.last_step, run.input_event
    agent, (_, step, event_id, _) = max(answers.items(), key=lambda item: item[1][1])
    return agent, step, event_id


def _content(msg: Any) -> Any:
    """A final message's content: a LangChain message's, or an OpenAI-style dict's."""
    return msg.get("content") if isinstance(msg, dict) else getattr(msg, "content", None)


def _same_message(written: Any, msg: Any) -> bool:
    """Whether the final message is the one a node's update wrote: the same object,
    or the message ``add_messages`` made of it (a chunk becomes a new message with
    its id; an OpenAI-style dict, an AI message of the same content)."""
    if written is msg:
        return True
    if written.__class__ is dict:  # (``add_messages`` makes a message of it, ids its own)
        return getattr(msg, "type", None) == "ai" and _content(msg) == written.get("content")
    given = getattr(msg, "id", None)
    return given is not None and getattr(written, "id", None) == given


def _words(content: Any) -> Any:
    """A message's content as its words: a text stripped of the space around it (a
    hook that tidies the reply, ``.strip()``, leaves the model's words)."""
    return content.strip() if isinstance(content, str) else content


def restated(written: Any, msg: Any) -> bool:
    """Whether a node's update writes again a message an earlier node wrote (the
    same id), its words unchanged: an ``after_agent`` hook that tidies or checks the
    reply and rewrites it by id is not its author."""
    given = getattr(msg, "id", None)
    return (
        given is not None
        and getattr(written, "id", None) == given
        and _words(getattr(written, "content", None)) == _words(getattr(msg, "content", None))
    )
