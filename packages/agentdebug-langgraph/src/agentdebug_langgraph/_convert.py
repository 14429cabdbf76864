"""LangChain and LangGraph objects turned into the small JSON shapes a trajectory keeps.

Capture runs on the graph's hot path, so these are hand-written and shallow: a
message becomes ``{"role", "content", ...}`` in a few dict operations instead of a
pydantic ``model_dump`` of every field (ids, response metadata, empty kwargs) that a
reader of the trace never needs. Anything not recognised is returned unchanged and
left to core's encoder, which keeps its text if it cannot serialise it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import orjson
from agentdebug.capture.encode import Walk
from agentdebug.capture.encode import to_json as core_to_json
from agentdebug.capture.walk import printed, safe_repr
from agentdebug.views import inline
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import Command, Send
from pydantic import BaseModel as PydanticModel

MESSAGES = "messages"  # the state key of a graph's conversation, unless it says otherwise

_ROLES = {
    "human": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "chat": "user",
}
_PLAIN = frozenset({str, int, float, bool, type(None)})
_AI = frozenset({"ai", "AIMessageChunk"})


_MESSAGE_CLASSES: dict[type, bool] = {}
_FIELDED: dict[type, bool] = {}  # class -> a pydantic model or a dataclass (compact)


def is_message(value: Any) -> bool:
    """``isinstance(value, BaseMessage)``, by a table of classes seen: the check
    through ``BaseMessage``'s ABC machinery costs about half a microsecond, and
    capture makes it several times per graph step."""
    cls = value.__class__
    known = _MESSAGE_CLASSES.get(cls)
    if known is None:
        known = _MESSAGE_CLASSES[cls] = issubclass(cls, BaseMessage)
    return known


def message(msg: BaseMessage) -> dict[str, Any]:
    """One chat message as ``{"role", "content"}`` plus tool calls or the tool's
    call id and status, the fields diagnosis reads. Fields are read by message
    type: probing a pydantic message for a field it lacks costs microseconds."""
    kind = msg.type
    out: dict[str, Any] = {"role": _ROLES.get(kind, kind), "content": msg.content}
    name = msg.name
    if name:
        out["name"] = name
    if kind in _AI:
        tool_calls = msg.tool_calls  # type: ignore[attr-defined]
        if tool_calls:
            out["tool_calls"] = [
                {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")}
                for c in tool_calls
            ]
        invalid = msg.invalid_tool_calls  # type: ignore[attr-defined]
        if invalid:  # arguments LangChain could not parse: no tool runs them
            out["invalid_tool_calls"] = [
                {
                    "id": c.get("id"),
                    "name": c.get("name"),
                    "args": c.get("args"),
                    "error": c.get("error"),
                }
                for c in invalid
            ]
    elif kind == "tool":
        out["tool_call_id"] = msg.tool_call_id  # type: ignore[attr-defined]
        status = msg.status  # type: ignore[attr-defined]
        if status and status != "success":
            out["status"] = status
    elif kind == "remove":  # a RemoveMessage: which message it deletes is all it says
        out["id"] = msg.id  # (REMOVE_ALL_MESSAGES: "__remove_all__", the whole history)
        del out["content"]
    return out


def messages(batch: Sequence[Any]) -> list[Any]:
    """The prompt of a chat-model call (``on_chat_model_start`` passes a list of
    prompts; a graph node sends one)."""
    return [compact(m) for m in batch]


DEEPEST = 100  # containers below this depth are left to core's encoder (see compact)


def compact(value: Any, _walk: Walk | None = None) -> Any:
    """A state, a node's update, a tool's output, with messages, ``Send`` and
    ``Command`` objects made small, and a pydantic state as its fields (those not
    excluded); everything else as it is.

    A container the walk refuses (one that holds itself, one more than
    ``DEEPEST`` levels down, one past the first hundred thousand: core's
    :class:`~agentdebug.capture.encode.Walk`) is returned as it is, for core's
    encoder to keep as text with a note; the walk stays linear however the value
    refers back to itself."""
    cls = value.__class__
    if cls in _PLAIN:
        return value
    container = cls is dict or cls is list or cls is tuple
    if not container:
        if is_message(value):
            return message(value)
        if cls is Send:
            return {"send": value.node, "arg": compact(send_arg(value.arg), _walk)}
        if cls is Command:
            return command(value)
        fielded = _FIELDED.get(cls)  # (a table: the checks cost ~0.5 us a value)
        if fielded is None:
            fielded = _FIELDED[cls] = issubclass(cls, PydanticModel) or (
                hasattr(cls, "__dataclass_fields__") and not issubclass(cls, type)
            )
        if not fielded:
            return value  # (neither a pydantic nor a dataclass state)
    walk = _walk if _walk is not None else Walk(deepest=DEEPEST)
    if not walk.enter(value):
        return value
    try:
        if cls is dict:
            return {k: compact(v, walk) for k, v in value.items()}
        if container:
            return [compact(v, walk) for v in value]
        if not isinstance(value, PydanticModel):  # a dataclass graph state: its fields
            return {f.name: compact(getattr(value, f.name, None), walk) for f in fields(value)}
        return {  # a pydantic graph state
            name: compact(getattr(value, name), walk)
            for name, spec in cls.model_fields.items()
            if not spec.exclude
        }
    finally:
        walk.leave(value)


_WITH_CONTEXT = "tool_call_with_context"


def send_arg(arg: Any) -> Any:
    """A ``Send`` packet's argument as it is recorded. The prebuilt agent's tool
    node gets one packet per tool call (``{"__type": "tool_call_with_context",
    "tool_call", "state"}``), each carrying the whole graph state: recorded as it
    is, every tool call would store the message history again, and a long run
    would grow with the square of its length. The state is in the trajectory
    already (the end of the node before), so a packet keeps its tool call alone,
    as a model's tool calls are recorded (id, name, arguments)."""
    if arg.__class__ is dict and arg.get("__type") == _WITH_CONTEXT and "state" in arg:
        call = arg.get("tool_call")
        if isinstance(call, dict):
            call = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}
        return {"tool_call": call}
    return arg


def payload(value: Any) -> Any:
    """A node's update or a branch's input, ready for ``TraceSession.emitter``
    with :func:`to_json`: a dict as it is (orjson walks it in C and asks
    ``to_json`` only about messages and ``Send`` packets in it), anything else made
    small here (a ``Command`` is a dataclass, which orjson would write whole
    without asking; one inside a dict, which is not a LangGraph update, is written
    whole, all its fields)."""
    return value if value.__class__ is dict else compact(value)


def branch_input(value: Any) -> Any:
    """The input of a node a ``Send`` started (its packet's argument), as
    :func:`payload` has it, a tool node's packet without the state it carries
    (see :func:`send_arg`)."""
    return payload(send_arg(value))


def to_json(value: Any) -> Any:
    """orjson's ``default`` for graph payloads: what :func:`compact` makes of the
    objects orjson does not know (messages, ``Send``, ``Command``), anything else
    as core's encoder has it. With :func:`payload`, the stored JSON is what
    ``compact`` makes of the value, without walking a node's update in Python."""
    cls = value.__class__
    known = _MESSAGE_CLASSES.get(cls)  # is_message, inline: prompts are full of messages
    if known is None:
        known = is_message(value)
    if known:
        return message(value)
    if cls is Send:
        return {"send": value.node, "arg": send_arg(value.arg)}
    if cls is Command:
        return command(value)
    return core_to_json(value)


def command(cmd: Command[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"command": True}
    if cmd.update is not None:
        out["update"] = compact(cmd.update)
    if cmd.goto:
        out["goto"] = compact(cmd.goto)
    if cmd.resume is not None:
        out["resume"] = compact(cmd.resume)
    if cmd.graph is not None:
        out["graph"] = cmd.graph
    return out


def command_outline(output: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """A tool's ``Command`` (or list of them) without its update's values: where it
    goes (``goto``, ``graph``) and the state keys it writes (``updates``)."""
    if isinstance(output, list):
        return [command_outline(c) for c in output if c.__class__ is Command]  # type: ignore[misc]
    out: dict[str, Any] = {}
    if output.goto:
        out["goto"] = compact(output.goto)
    if output.graph is not None:
        out["graph"] = output.graph
    update = output.update
    if isinstance(update, dict):
        out["updates"] = [str(k) for k in update]
    elif isinstance(update, (list, tuple)):
        out["updates"] = [str(item[0]) for item in update if isinstance(item, tuple) and item]
    return out


def answer_in(output: Any, call_id: str | None) -> Any:
    """The answer a tool's ``Command`` (or list of them, as ``ToolNode`` takes)
    writes for its call: the ``ToolMessage``, or a message dict of role ``tool``,
    whose ``tool_call_id`` is the call's (the only one when the id is not known),
    found in the update however it is given (a dict of channels, ``(key, value)``
    pairs, or a list of messages for a graph whose state is one); None when there
    is none, or more than one."""
    found: dict[int, Any] = {}  # (by identity: one message under two keys is one)

    def look(value: Any) -> None:
        if value.__class__ is Command:
            update = value.update
            if isinstance(update, dict):
                for item in update.values():
                    look(item)
            elif update is not None:
                look(update)
        elif isinstance(value, (list, tuple)):
            for item in value:
                look(item)
        elif isinstance(value, ToolMessage) or (
            isinstance(value, dict) and value.get("role") == "tool"
        ):
            said = (
                value.tool_call_id if isinstance(value, ToolMessage) else value.get("tool_call_id")
            )
            if call_id is None or said == call_id:
                found[id(value)] = value

    look(output)
    return next(iter(found.values())) if len(found) == 1 else None


MAY_SEND = frozenset({Send, list, tuple, Command})  # the classes has_send looks into


def has_send(value: Any) -> bool:
    """Whether a branch function or node returned ``Send`` packets (fan-out)."""
    cls = value.__class__
    if cls is Send:
        return True
    if cls is list or cls is tuple:
        return any(v.__class__ is Send for v in value)
    if cls is Command:
        goto = value.goto
        return goto.__class__ is Send or (
            isinstance(goto, (list, tuple)) and any(g.__class__ is Send for g in goto)
        )
    return False


def count_sends(value: Any) -> int:
    cls = value.__class__
    if cls is Send:
        return 1
    if cls is Command:
        return count_sends(value.goto)
    if cls is list or cls is tuple:
        return sum(1 for v in value if v.__class__ is Send)
    return 0


def last_ai_text(state: Any, key: str = MESSAGES) -> tuple[str | None, Any]:
    """The final answer of a message-state graph: the last assistant message
    without tool calls, if the state has a list of messages under ``key``: a
    LangChain message, or an OpenAI-style ``{"role": "assistant", ...}`` dict (a
    graph that keeps its messages as the OpenAI SDK gives them)."""
    if not isinstance(state, dict):
        return None, None
    msgs = state.get(key)
    if not isinstance(msgs, list):
        return None, None
    for msg in reversed(msgs):
        if isinstance(msg, BaseMessage) and msg.type in ("ai", "AIMessageChunk"):
            if getattr(msg, "tool_calls", None):
                return None, msg
            return text_of(msg.content), msg
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            if msg.get("tool_calls"):
                return None, msg
            return text_of(msg.get("content") or ""), msg
    return None, None


def tool_ending(state: Any, key: str = MESSAGES) -> tuple[str | None, Any]:
    """The answer of a run that ended on tools' messages (a ``return_direct``
    tool, an edge from the tools to the end): the texts of the tool messages the
    messages end with (several, for parallel calls), and the last of them; (None,
    None) otherwise."""
    msgs = state.get(key) if isinstance(state, dict) else None
    said: list[str] = []  # (parallel calls' answers: each, in order)
    last = None
    for msg in reversed(msgs) if isinstance(msgs, list) else ():
        if isinstance(msg, BaseMessage) and msg.type == "tool":
            said.append(text_of(msg.content))
        elif isinstance(msg, dict) and msg.get("role") == "tool":
            said.append(text_of(msg.get("content") or ""))
        else:
            break
        last = last if last is not None else msg
    return ("\n".join(reversed(said)), last) if said else (None, None)


def text_of(content: Any) -> str:
    """A message's text, also when the content is a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return str(content)


def first_human_text(state: Any, key: str = MESSAGES) -> str | None:
    """The user's request in a message-state input (a dict, or a pydantic or
    dataclass state with a field ``key`` of messages): a natural goal for the run."""
    said = human_texts(state, key, first=True)
    return said[0] if said else None


def human_texts(state: Any, key: str = MESSAGES, first: bool = False) -> list[str]:
    """The texts of the user's messages in ``state[key]``, in order (only the
    first, with ``first``)."""
    if isinstance(state, dict):
        msgs = state.get(key)
    elif isinstance(state, (str, bytes, Command)) or state is None:
        msgs = None
    else:
        try:
            msgs = getattr(state, key, None)
        except Exception:  # a user's object may raise anything from a property
            msgs = None
    if isinstance(msgs, (BaseMessage, str, dict, tuple)):  # one message, as add_messages
        msgs = [msgs]  # takes anything but a list (a ("user", "text") pair included)
    said: list[str] = []
    for msg in msgs if isinstance(msgs, list) else ():
        if isinstance(msg, BaseMessage) and msg.type == "human":
            said.append(text_of(msg.content))
        elif isinstance(msg, tuple) and len(msg) == 2 and msg[0] in ("user", "human"):
            said.append(str(msg[1]))
        elif isinstance(msg, dict) and (msg.get("role") or msg.get("type")) in ("user", "human"):
            said.append(text_of(msg.get("content")))
        elif isinstance(msg, str):
            said.append(msg)
        if first and said:
            break
    return said


def usage_counts(meta: Any) -> dict[str, Any]:
    """Token counts as the model reported them (a message's ``usage_metadata``),
    never estimated."""
    return {
        "input_tokens": meta.get("input_tokens"),
        "output_tokens": meta.get("output_tokens"),
        "total_tokens": meta.get("total_tokens"),
    }


def interrupts_of(error: GraphInterrupt) -> Sequence[Any]:
    """The ``Interrupt`` objects an interrupt carries."""
    if error.args and isinstance(error.args[0], (list, tuple)):
        return error.args[0]
    return ()


def resume_record(inputs: Any) -> tuple[Any, dict[str, Any]]:
    """What a resume gave, and how, for its ``USER_INPUT`` event: the value of
    ``Command(resume=...)`` (``None`` for ``invoke(None)`` past a static
    interrupt), and metadata a rerun reads to give a branch the same answer:
    ``resumed_with`` (``"command"`` or ``"none"``) and ``replayable``, true when
    what is stored is exactly what was given (a command with nothing but a plain
    JSON value to resume with: no ``update``, ``goto`` or ``graph``)."""
    if not isinstance(inputs, Command):
        return None, {"resumed_with": "none", "replayable": inputs is None}
    plain = inputs.update is None and not inputs.goto and inputs.graph is None
    return inputs.resume, {
        "resumed_with": "command",
        "replayable": plain and is_plain_json(inputs.resume),
    }


def is_plain_json(value: Any, depth: int = 0) -> bool:
    """Whether JSON holds ``value`` as it is: strings, finite numbers, booleans,
    ``None``, and lists and string-keyed dicts of them (not tuples, which come
    back as lists), at most ``DEEPEST`` levels down."""
    cls = value.__class__
    if cls is float:
        return bool(value == value and value not in (float("inf"), float("-inf")))
    if cls in _PLAIN:
        return True
    if depth >= DEEPEST:
        return False
    if cls is list:
        return all(is_plain_json(v, depth + 1) for v in value)
    if cls is dict:
        return all(k.__class__ is str and is_plain_json(v, depth + 1) for k, v in value.items())
    return False


def goes_on(inputs: Any) -> bool:
    """An input that goes on from where the thread stopped: ``None`` (a retry, or
    past a static interrupt) or a ``Command`` with a ``resume``."""
    return inputs is None or (isinstance(inputs, Command) and inputs.resume is not None)


def is_fresh_input(inputs: Any) -> bool:
    """An input that starts a new run (not a resume, not ``None``)."""
    return inputs is not None and not isinstance(inputs, Command)


def short_text(value: Any, limit: int = 200) -> str:
    """A value made small, as text of at most ``limit`` characters. Never raises: a
    value whose text cannot be made (an object whose ``repr`` raises, in a dict)
    reads as JSON with that object as ``<unprintable Type>``."""
    small = compact(value)
    text = printed(str, small)
    if text is None:
        try:
            text = orjson.dumps(small, default=safe_repr, option=orjson.OPT_NON_STR_KEYS).decode()
        except Exception:  # (one past orjson's depth limit, say)
            text = safe_repr(small)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def goal_text(value: Any, limit: int = 200) -> str:
    """The goal of a run whose input holds no conversation (a pipeline's state):
    the input on one line as the timeline writes a payload, ``key=value`` pairs
    (``building={name="Cedar Point Plaza", year=2024}``), not Python's repr of a
    dict; :func:`short_text` where that cannot be made."""
    try:
        text = inline(compact(value), limit, spoken=True)  # (a record's content is its own)
    except Exception:  # (a value the line cannot walk: made small as text)
        text = ""
    if not text:
        return short_text(value, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def messages_key(graph: Any) -> str:
    """The state key that holds a graph's conversation: ``messages`` when it has
    one, else the first key an ``add_messages`` reducer keeps (``history``,
    ``chat_history``); ``messages`` when none does, or the graph is not known."""
    try:
        channels = graph.channels if graph is not None else {}
        if MESSAGES in channels:
            return MESSAGES
        from langgraph.graph.message import add_messages

        for key, channel in channels.items():
            if getattr(channel, "operator", None) is add_messages:
                return str(key)
    except Exception:  # (a graph-like object of another kind)
        pass
    return MESSAGES


def state_schema(graph: Any) -> dict[str, Any] | None:
    """A graph's state, as ``agentdebug``'s ``state_schema`` metadata holds it: the
    keys a node's update can write (its channels, private ones too: a key of none
    LangGraph drops without an error) and, of those merged by a reducer, the
    reducer's name (``add_messages``, ``add``, ``merge_prefs``); None for a graph
    whose nodes write no keys (the functional API's entrypoint) or one not known."""
    try:
        keys = graph.stream_channels if graph is not None else None
        if not isinstance(keys, list) or not keys:
            return None
        channels = graph.channels
        reducers: dict[str, str] = {}
        for key in keys:
            merge = getattr(channels.get(key), "operator", None)
            if merge is not None:
                name = str(getattr(merge, "__qualname__", None) or type(merge).__name__)
                reducers[str(key)] = "add_messages" if "add_messages" in name else name
        return {"keys": [str(k) for k in keys], "reducers": reducers}
    except Exception:  # (a graph-like object of another kind)
        return None


def node_names(graph: Any) -> list[str]:
    """A compiled graph's own nodes (not ``__start__`` and the like)."""
    try:
        return [n for n in graph.nodes if not n.startswith("__")] if graph is not None else []
    except Exception:
        return []


def graph_nodes(graph: Any, depth: int = 0) -> frozenset[tuple[str, str]]:
    """(node, the graph's name) of a compiled graph's nodes that are compiled graphs
    themselves (``add_node("review", writer)``), and of their subgraphs' such nodes,
    a few levels down: a subgraph started as its node's first step, which is how a
    graph a node's function invokes starts too. Read once a run, at its start."""
    from langgraph.pregel import Pregel

    found: set[tuple[str, str]] = set()
    try:
        for name, node in graph.nodes.items() if graph is not None and depth < 8 else ():
            bound = getattr(node, "bound", None)
            if isinstance(bound, Pregel):
                found.add((str(name), str(bound.name)))
                found |= graph_nodes(bound, depth + 1)
    except Exception:  # (a graph-like object of another kind)
        return frozenset()
    return frozenset(found)


SUBGRAPH_DEPTH = 3  # subgraph levels whose tool nodes are read (a node that is a graph)


def node_tools(graph: Any, _prefix: str = "", _depth: int = 0) -> dict[str, list[str]]:
    """The tools each of a compiled graph's tool-running nodes runs (a ``ToolNode``'s
    ``tools_by_name``, in a prebuilt agent's graph too), by the agent name its
    events get (``react/tools`` for one in a subgraph node ``react``): what its model
    was offered, which a call names only when it is used. Read once a run, at its
    start."""
    found: dict[str, list[str]] = {}
    try:
        for name, node in graph.nodes.items() if graph is not None else ():
            if name.startswith("__"):
                continue
            bound = getattr(node, "bound", None)
            tools = getattr(bound, "tools_by_name", None)
            if isinstance(tools, dict):
                found[f"{_prefix}{name}"] = [str(t) for t in list(tools)[:200]]
            elif _depth < SUBGRAPH_DEPTH and bound is not graph and hasattr(bound, "builder"):
                found.update(node_tools(bound, f"{_prefix}{name}/", _depth + 1))
    except Exception:  # (a graph-like object of another kind)
        return found
    return found


def output_keys(graph: Any, frame: Any = None) -> frozenset[str] | None:
    """The state keys ``invoke`` returns (a graph's ``output_schema``), where a run
    ends with more: ``stream`` with its default keys ends with every key (read
    from its frame: the keys it streams), so a success check is given the final
    state as ``invoke`` returns it, whichever ran the graph (and the branch). None
    where there is nothing to cut: ``invoke``, or ``output_keys`` the caller chose."""
    keys = getattr(graph, "output_channels", None)
    if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
        return None
    try:
        streamed = frame.f_locals.get("output_keys") if frame is not None else None
        default = graph.stream_channels_asis
    except Exception:  # (a graph object of another shape)
        return None
    if streamed is None or list(streamed) != list(default) or set(streamed) == set(keys):
        return None
    return frozenset(keys)


def as_invoked(outputs: Any, keys: frozenset[str] | None) -> Any:
    """A run's final state as ``invoke`` returns it (see :func:`output_keys`)."""
    if keys is None or not isinstance(outputs, dict) or outputs.keys() <= keys:
        return outputs
    return {k: v for k, v in outputs.items() if k in keys}
