"""What a graph run was invoked with besides its input, so that a rerun branch runs
with it too.

A node may read the run's ``config["configurable"]`` (a user id, a model name) or,
since LangGraph 0.6, its ``Runtime.context`` (``graph.invoke(..., context=Ctx(...))``
with ``StateGraph(..., context_schema=Ctx)``). Neither is in the checkpoint: LangGraph
takes them from each call. A branch forked from a checkpoint and run without them
fails in the first node that reads them, for a reason that is not the agent's.

So the start of a run reads them from the frame of ``Pregel.stream`` (its ``config``
and ``context`` arguments), keeps the live objects for reruns in this process
(:func:`note_invocation`), and records what JSON holds as it is under the run's
``metadata["langgraph"]["invoked_with"]``: the configurable keys whose values are
plain JSON, the context's fields (a dataclass, a pydantic model or a dict), the
context's class, the recursion limit. What cannot be recorded (an object without a
JSON form, a value under a name that looks like a secret, at any depth: ``api_key``,
``token``, ``password``...) is named there, never stored; a rerun in another process that needs
it refuses, saying how to give it (``LangGraphRerunExecutor(config=..., context=...)``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from types import FrameType
from typing import Any

import orjson
from agentdebug.errors import AgentDebugError

from agentdebug_langgraph._convert import is_plain_json
from agentdebug_langgraph._specs import load_spec, spec_of

log = logging.getLogger("agentdebug.langgraph")

KEY = "invoked_with"  # under the run's metadata["langgraph"]
# configurable keys LangGraph sets or a branch sets itself (its thread, its checkpoint)
_OWN_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map"})
# names whose values are not written to the store
SECRET_NAME = re.compile(
    r"(?i)(api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(or)?d|credential"
    r"|authori[sz]ation|(^|[_-])auth$|bearer|cookie|token$)"
)  # (not ``max_tokens``, ``author``)
MOST_BYTES = 64 * 1024  # a context's JSON beyond this is named, not stored


@dataclass(frozen=True)
class Invocation:
    """A run's configurable keys (the user's, not LangGraph's), runtime context and
    recursion limit."""

    configurable: dict[str, Any]
    context: Any = None
    recursion_limit: int | None = None


# run id -> what it was invoked with, live, for the last KEPT runs: reruns in this
# process get the very objects (a context holding a client or a connection too)
KEPT = 256
_LIVE: OrderedDict[str, Invocation] = OrderedDict()


def read(frame: FrameType | None) -> Invocation | None:
    """What the ``Pregel.stream`` call in ``frame`` was given; None if unreadable."""
    if frame is None:
        return None
    try:
        local = frame.f_locals
        config = local.get("config")
        config = config if isinstance(config, dict) else {}
        conf = config.get("configurable")
        conf = conf if isinstance(conf, dict) else {}
        user = {
            k: v
            for k, v in conf.items()
            if isinstance(k, str) and not k.startswith("__") and k not in _OWN_KEYS
        }
        limit = config.get("recursion_limit")
        return Invocation(
            configurable=user,
            context=local.get("context"),
            # (LangGraph's default is an int subclass it fills in: not the user's)
            recursion_limit=limit if limit.__class__ is int else None,
        )
    except Exception:  # a LangGraph that keeps them elsewhere: reruns go without
        log.debug("agentdebug: the run's config could not be read", exc_info=True)
        return None


def note_invocation(run_id: str, invocation: Invocation | None) -> None:
    if invocation is None:
        return
    _LIVE[run_id] = invocation
    _LIVE.move_to_end(run_id)
    while len(_LIVE) > KEPT:
        _LIVE.popitem(last=False)


def live_invocation(run_id: str | None) -> Invocation | None:
    return _LIVE.get(run_id) if run_id else None


def record(invocation: Invocation | None) -> dict[str, Any] | None:
    """The JSON the run's metadata keeps of ``invocation`` (None if there is nothing
    to keep): ``configurable`` (plain values), ``unrecorded`` (the keys left out),
    ``context`` with ``context_type``, or ``context_unrecorded`` (why not), and
    ``recursion_limit``."""
    if invocation is None:
        return None
    out: dict[str, Any] = {}
    kept, left = {}, []
    for key, value in invocation.configurable.items():
        if SECRET_NAME.search(key) or not is_plain_json(value) or _holds_secret(value):
            left.append(key)
        else:
            kept[key] = value
    if kept:
        out["configurable"] = kept
    if left:
        out["unrecorded"] = sorted(left)
    context = invocation.context
    if context is not None:
        kind = type(context)
        out["context_type"] = spec_of(kind) or f"{kind.__module__}:{kind.__qualname__}"
        fields, why = _context_json(context)
        if why is None:
            out["context"] = fields
        else:
            out["context_unrecorded"] = why
    if invocation.recursion_limit is not None:
        out["recursion_limit"] = invocation.recursion_limit
    return out or None


def _context_json(context: Any) -> tuple[Any, str | None]:
    """(the context's fields as JSON, None), or (None, why they are not recorded)."""
    kind = type(context).__name__
    try:
        if dataclasses.is_dataclass(context) and not isinstance(context, type):
            fields: Any = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
        elif hasattr(context, "model_dump") and hasattr(type(context), "model_fields"):
            fields = context.model_dump(mode="json")
        elif isinstance(context, dict):
            fields = dict(context)
        else:
            return None, f"a {kind} is neither a dataclass, a pydantic model nor a dict"
    except Exception as exc:
        return None, f"its fields could not be read ({type(exc).__name__}: {exc})"
    if not isinstance(fields, dict):
        return None, f"a {kind} whose fields are not a mapping"
    odd = sorted(str(k) for k, v in fields.items() if not is_plain_json({str(k): v}))
    if odd:
        return None, f"field {', '.join(odd)} has no JSON form"
    secret = sorted({k for k, v in fields.items() if SECRET_NAME.search(k) or _holds_secret(v)})
    if secret:
        return None, f"field {', '.join(secret)} holds a secret's name, which is not stored"
    if len(orjson.dumps(fields)) > MOST_BYTES:
        return None, f"its fields are over {MOST_BYTES // 1024} KiB of JSON"
    return fields, None


def _holds_secret(value: Any) -> bool:
    """Whether plain JSON ``value`` has a key that looks like a secret's, at any depth."""
    if isinstance(value, dict):
        return any(SECRET_NAME.search(k) or _holds_secret(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return False


# -- for a rerun ------------------------------------------------------------------------


def for_branch(
    run: Any,
    graph: Any,
    *,
    configurable: dict[str, Any],
    context: Any,
) -> Invocation:
    """What a branch of ``run`` (a trajectory) is invoked with: the live objects if
    the run (or the run it is a branch of) was made in this process, else what its
    metadata recorded, with the executor's own ``configurable`` keys and ``context``
    (None: not given) over either. Raises AgentDebugError naming what the run was
    invoked with that neither holds, and how to give it."""
    live = live_invocation(run.id) or live_invocation(run.parent_id)
    lg = run.metadata.get("langgraph")
    got = lg.get(KEY) if isinstance(lg, dict) else None
    got = got if isinstance(got, dict) else {}
    if live is not None:
        conf = {**live.configurable, **configurable}
        ctx = live.context if context is None else context
        return Invocation(conf, ctx, live.recursion_limit)
    recorded = got.get("configurable")
    conf = {**(recorded if isinstance(recorded, dict) else {}), **configurable}
    missing = [k for k in got.get("unrecorded") or () if k not in conf]
    problems = []
    if missing:
        keys = ", ".join(missing)
        problems.append(
            f"configurable key {keys} (not stored: a secret's name, or a value without a "
            f"JSON form); give it as LangGraphRerunExecutor(config={{'configurable': "
            f"{{'{missing[0]}': ...}}}})"
        )
    ctx = context
    if ctx is None and got.get("context_type"):
        why = got.get("context_unrecorded")
        if why:
            problems.append(
                f"its runtime context, a {got['context_type']} ({why}); give it as "
                "LangGraphRerunExecutor(context=...)"
            )
        else:
            ctx = _rebuilt(got.get("context"), str(got["context_type"]), graph)
    if problems:
        raise AgentDebugError(
            f"cannot rerun run '{run.id}' here: it was invoked with "
            + "; and with ".join(problems)
            + ". A rerun in the process that made the run uses the very objects"
        )
    limit = got.get("recursion_limit")
    return Invocation(conf, ctx, limit if isinstance(limit, int) else None)


def _rebuilt(fields: Any, type_spec: str, graph: Any) -> Any:
    """The context from its recorded fields: through the graph's ``context_schema``
    (LangGraph makes a dataclass or pydantic model of a dict itself), else the
    recorded class when it imports, else the fields as a dict."""
    if getattr(graph, "context_schema", None) is not None or not isinstance(fields, dict):
        return fields
    try:
        kind = load_spec(type_spec, "context class")
    except AgentDebugError:
        return fields
    try:
        if hasattr(kind, "model_validate"):
            return kind.model_validate(fields)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            return kind(**fields)
    except Exception as exc:
        raise AgentDebugError(
            f"the recorded runtime context could not be made a {type_spec} again "
            f"({type(exc).__name__}: {exc}); give it as LangGraphRerunExecutor(context=...)"
        ) from exc
    return fields
