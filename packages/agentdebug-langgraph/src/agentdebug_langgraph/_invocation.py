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
import functools
import itertools
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from types import FrameType
from typing import Any

import orjson
from agentdebug.errors import AgentDebugError
from agentdebug.store.base import continues_of
from agentdebug.store.history import history_runs

from agentdebug_langgraph._convert import is_plain_json
from agentdebug_langgraph._specs import load_spec, spec_of

log = logging.getLogger("agentdebug.langgraph")

KEY = "invoked_with"  # under the run's metadata["langgraph"]
# configurable keys LangGraph sets or a branch sets itself (its thread, its checkpoint)
_OWN_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map"})
# names whose values are not written to the store. A leak costs more than a refusal
# (a rerun in another process then needs the value given), so a name is read both
# as words ("apiKey", "x-api-key", "OPENAI_API_KEY": api, key) and run together
# ("userpassword", "SECRETKEY"). A word that names a secret anywhere in the name...
_SECRET_WORDS = frozenset(
    {"secret", "secrets", "password", "passwords", "passwd", "passphrase", "credential",
     "credentials", "authorization", "authorisation", "auth", "bearer", "cookie", "cookies",
     "jwt", "dsn"}
)  # fmt: skip
# ... what is private of these kinds, or last ("private_data", "private"; not
# "include_private_repos")...
_PRIVATE_KINDS = frozenset({"key", "keys", "data", "info"})
# ... and, run together, these anywhere ("aws_access_key_id", "api_keys") and these
# at the end ("db_pwd", "session_token"; not "pwd_dir", "token_limit", "max_tokens")
_SECRET_STEMS = ("password", "passwd", "passphrase", "credential", "apikey", "accesskey",
                 "privatekey", "secretkey", "signingkey", "encryptionkey", "clientsecret",
                 "apisecret", "bearer", "authorization", "accesstoken", "refreshtoken",
                 "authtoken")  # fmt: skip
_SECRET_ENDS = ("secret", "secrets", "token", "pwd", "key")
# words that end as a key does and are none ("hotkey": a shortcut)
_NOT_KEYS = frozenset({"hotkey", "monkey", "donkey", "turkey", "jockey", "hockey", "whiskey"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
MOST_BYTES = 64 * 1024  # a context's JSON beyond this is named, not stored


def secret_name(name: str) -> bool:
    """Whether a configurable key or a field's name says its value is a secret
    (``api_key``, ``apiKeys``, ``client_secret``, ``access_token``, ``userpassword``,
    ``Authorization``, ``cookie_header``; not ``max_tokens``, ``author``, ``hotkey``,
    ``secretary_email``, ``include_private_repos``)."""
    words = [w.lower() for w in _WORD.findall(name)]
    if not words:
        return False
    if any(w in _SECRET_WORDS for w in words) or words[-1] == "private":
        return True
    if any(a == "private" and b in _PRIVATE_KINDS for a, b in itertools.pairwise(words)):
        return True
    joined = "".join(words)
    if words[-1] in _NOT_KEYS:
        joined = joined[: -len(words[-1])]
    return any(s in joined for s in _SECRET_STEMS) or joined.endswith(_SECRET_ENDS)


REDACTED = "[redacted]"  # what a secret-named field of a run's input is stored as
_REDACT_DEPTH = 4  # levels of a run's input whose fields are looked at


def redacted(value: Any, _depth: int = 0) -> Any:
    """A run's input (made small: a dict) with the values of fields whose names say
    they are secrets (:func:`secret_name`: ``api_key``, ``db_password``) stored as
    ``[redacted]``, in nested dicts and lists too, as configurable keys are never
    stored; anything else as it is. The input and the goal made from it are what
    ``agentdebug list`` and ``show`` print."""
    if _depth > _REDACT_DEPTH:
        return value
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str) and secret_name(k) and v is not None
            else redacted(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redacted(v, _depth + 1) for v in value]
    return value


def _plain_default_limit() -> int | None:
    """The recursion limit LangGraph fills in when none is given, where it is a
    plain ``int`` (before 1.2.17; since, an ``int`` subclass, told apart by its
    class, so that a user's limit of the same value is kept)."""
    try:
        from langgraph._internal._config import DEFAULT_RECURSION_LIMIT
    except Exception:  # a LangGraph that keeps it elsewhere: its class tells
        return None
    return DEFAULT_RECURSION_LIMIT if DEFAULT_RECURSION_LIMIT.__class__ is int else None


_PLAIN_DEFAULT_LIMIT = _plain_default_limit()


@dataclass(frozen=True)
class Invocation:
    """A run's configurable keys (the user's, not LangGraph's), runtime context and
    recursion limit."""

    configurable: dict[str, Any]
    context: Any = None
    recursion_limit: int | None = None


# run id -> what it was invoked with, live, for the last KEPT runs: reruns in this
# process get the very objects (a context holding a client or a connection too).
# A run that succeeded moves to a shorter list (KEPT_SUCCEEDED): reruns are of runs
# that failed or stopped, and a service whose runs mostly succeed, each with a
# client of its own, would otherwise hold hundreds of them open.
KEPT = 256
KEPT_SUCCEEDED = 16
_LIVE: OrderedDict[str, Invocation] = OrderedDict()
_SUCCEEDED: OrderedDict[str, Invocation] = OrderedDict()


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
            # (LangGraph's default is an int subclass it fills in: not the user's;
            # before 1.2.17, a plain int, told apart by its value)
            recursion_limit=(
                limit if limit.__class__ is int and limit != _PLAIN_DEFAULT_LIMIT else None
            ),
        )
    except Exception:  # a LangGraph that keeps them elsewhere: reruns go without
        log.debug("agentdebug: the run's config could not be read", exc_info=True)
        return None


def note_invocation(run_id: str, invocation: Invocation | None) -> None:
    """Keep what run ``run_id`` was invoked with; a later call of the same run (a
    resume) adds its own, without erasing a context it did not pass again."""
    if invocation is None:
        return
    before = _LIVE.get(run_id) or _SUCCEEDED.pop(run_id, None)
    _LIVE[run_id] = invocation if before is None else _over(invocation, before)
    _LIVE.move_to_end(run_id)
    while len(_LIVE) > KEPT:
        _LIVE.popitem(last=False)


def succeeded(run_id: str) -> None:
    """Run ``run_id`` ended a success: what it was invoked with is kept among the
    last KEPT_SUCCEEDED such runs only (a rerun of it is rare: of a run judged
    wrong later, which without its live context is given the recorded one)."""
    invocation = _LIVE.pop(run_id, None)
    if invocation is None:
        return
    _SUCCEEDED[run_id] = invocation
    while len(_SUCCEEDED) > KEPT_SUCCEEDED:
        _SUCCEEDED.popitem(last=False)


def _over(nearer: Invocation, farther: Invocation) -> Invocation:
    """``nearer`` over ``farther``: its configurable keys over the other's, its
    context and recursion limit unless it has none."""
    return Invocation(
        {**farther.configurable, **nearer.configurable},
        farther.context if nearer.context is None else nearer.context,
        nearer.recursion_limit or farther.recursion_limit,
    )


def live_invocation(run_id: str | None) -> Invocation | None:
    return (_LIVE.get(run_id) or _SUCCEEDED.get(run_id)) if run_id else None


def record(invocation: Invocation | None) -> dict[str, Any] | None:
    """The JSON the run's metadata keeps of ``invocation`` (None if there is nothing
    to keep): ``configurable`` (plain values), ``unrecorded`` (the keys left out),
    ``context`` with ``context_type``, or ``context_unrecorded`` (why not), and
    ``recursion_limit``."""
    if invocation is None:
        return None
    try:
        return _record(invocation)
    except Exception as exc:  # never in the way of recording the run
        log.warning("agentdebug: what the run was invoked with is not recorded (%s)", exc)
        return {"unrecorded_reason": f"{type(exc).__name__}: {exc}"}


def _record(invocation: Invocation) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    kept, left = {}, []
    for key, value in invocation.configurable.items():
        if secret_name(key) or _json_size(value) is None or _holds_secret(value):
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


def _json_size(value: Any) -> int | None:
    """The size of ``value``'s JSON if JSON holds it as it is (not a tuple, not an
    integer orjson cannot write, nothing over ``MOST_BYTES``), else None."""
    if not is_plain_json(value):
        return None
    try:
        size = len(orjson.dumps(value))
    except Exception:
        return None
    return size if size <= MOST_BYTES else None


def _context_json(context: Any) -> tuple[Any, str | None]:
    """(the context's fields as JSON, None), or (None, why they are not recorded).
    Recorded only when the fields make the same context again (a pydantic model
    with a ``SecretStr``, an excluded or aliased field, a dataclass field outside
    ``__init__`` would come back different, so they are named instead)."""
    kind = type(context)
    try:
        if dataclasses.is_dataclass(context) and not isinstance(context, type):
            fields: Any = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
        elif hasattr(context, "model_dump") and hasattr(kind, "model_validate"):
            fields = context.model_dump(mode="json", by_alias=True)
        elif isinstance(context, dict):
            fields = dict(context)
        else:
            return None, f"a {kind.__name__} is neither a dataclass, a pydantic model nor a dict"
    except Exception as exc:
        return None, f"its fields could not be read ({type(exc).__name__}: {exc})"
    if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
        return None, f"a {kind.__name__} whose fields are not named by text"
    odd = sorted(k for k, v in fields.items() if _json_size(v) is None)
    if odd:
        return None, f"field {', '.join(odd)} has no JSON form, or too long a one"
    secret = sorted({k for k, v in fields.items() if secret_name(k) or _holds_secret(v)})
    if secret:
        return None, f"field {', '.join(secret)} holds a secret's name, which is not stored"
    if _json_size(fields) is None:
        return None, f"its fields are over {MOST_BYTES // 1024} KiB of JSON"
    try:
        same = isinstance(context, dict) or _made(kind, fields) == context
    except Exception:
        same = False
    if not same:
        return None, "its fields as JSON do not make the same context again"
    return fields, None


def _made(kind: type, fields: dict[str, Any]) -> Any:
    """A context of class ``kind`` from recorded fields."""
    validate = getattr(kind, "model_validate", None)
    if validate is not None:
        return validate(fields)
    return kind(**fields)


def _holds_secret(value: Any) -> bool:
    """Whether plain JSON ``value`` has a key that looks like a secret's, at any depth."""
    if isinstance(value, dict):
        return any(
            not isinstance(k, str) or secret_name(k) or _holds_secret(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return False


# -- for a rerun ------------------------------------------------------------------------


_CONTEXT_KEYS = ("context", "context_type", "context_unrecorded")


def inherited(own: dict[str, Any] | None, before: dict[str, Any] | None, run_id: str) -> Any:
    """The record of a run that continues run ``run_id`` (``invoke(None)`` after it
    stopped, a resume served by another process), given ``before``, that run's
    record: its own configurable keys over the other's, and the other's context and
    recursion limit where it gave none (``inherited_from`` names the run), as a rerun
    in this process takes the live objects along the runs it continues. A branch
    forked in the earlier part of the history replays nodes that ran with them."""
    if not before:
        return own
    mine = dict(own or {})
    out: dict[str, Any] = {k: v for k, v in before.items() if k != "inherited_from"}
    conf = {**(before.get("configurable") or {}), **(mine.get("configurable") or {})}
    if conf:
        out["configurable"] = conf
    left_out = [k for k in before.get("unrecorded") or () if k not in conf]
    left_out += [k for k in mine.get("unrecorded") or () if k not in left_out]
    if left_out:
        out["unrecorded"] = left_out
    else:
        out.pop("unrecorded", None)
    if any(k in mine for k in _CONTEXT_KEYS):  # its own context, over the other's
        for key in _CONTEXT_KEYS:
            out.pop(key, None)
            if key in mine:
                out[key] = mine[key]
    for key in ("recursion_limit", "unrecorded_reason"):
        if key in mine:
            out[key] = mine[key]
    if out != mine:
        out["inherited_from"] = run_id
    return out


def for_branch(
    run: Any,
    graph: Any,
    *,
    configurable: dict[str, Any],
    context: Any,
) -> Invocation:
    """What a branch of ``run`` (a trajectory) is invoked with: the live objects if
    the run (or the run it is a branch of, or continues) was made in this process,
    else what its metadata recorded, with the executor's own ``configurable`` keys
    and ``context`` (None: not given) over either. Raises AgentDebugError naming
    what the run was invoked with that neither holds, and how to give it."""
    live = _live_along(run)
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
    if got.get("unrecorded_reason") and context is None:
        problems.append(f"a configuration that could not be recorded ({got['unrecorded_reason']})")
    if missing:
        keys = ", ".join(missing)
        problems.append(
            f"configurable key {keys} (not stored: a secret's name, or a value without a "
            f"JSON form); give it as LangGraphRerunExecutor(config={{'configurable': "
            f"{{'{missing[0]}': ...}}}}) (on the command line: --executor module:function, "
            "a function of yours that returns that executor, reading the value from where "
            "your app keeps it)"
        )
    ctx = context
    if ctx is None and got.get("context_type"):
        kind = str(got["context_type"])
        why = got.get("context_unrecorded") or None
        if why is None:
            ctx, why = _rebuilt(got.get("context"), kind, graph)
        if why is not None:
            problems.append(
                f"its runtime context, a {kind} ({why}); give it as "
                "LangGraphRerunExecutor(context=...) (on the command line: --executor "
                "module:function, a function of yours that returns that executor)"
            )
    if problems:
        raise AgentDebugError(
            f"cannot rerun run '{run.id}' here: it was invoked with "
            + "; and with ".join(problems)
            + f". (A rerun in the process that made the run, among its last {KEPT}, "
            "uses the very objects.)"
        )
    limit = got.get("recursion_limit")
    return Invocation(conf, ctx, limit if isinstance(limit, int) else None)


def _live_along(run: Any) -> Invocation | None:
    """The live invocation of the run, else of the run it is a branch of, else of
    the runs it continues (a resume served here, a retry with ``invoke(None)``):
    the nearest one's configurable keys over the farther ones', and the nearest
    context given."""
    ids = [run.id, run.parent_id, *reversed(history_runs(run)), continues_of(run.metadata)]
    found = [inv for inv in map(live_invocation, dict.fromkeys(i for i in ids if i)) if inv]
    return functools.reduce(_over, found) if found else None


def _rebuilt(fields: Any, type_spec: str, graph: Any) -> tuple[Any, str | None]:
    """(the context from its recorded fields, None), or (None, why it cannot be):
    an instance of the graph's ``context_schema`` when it is a dataclass or a
    pydantic model, else of the recorded class, imported by its name; a dict for
    a dict's record (or a ``TypedDict`` schema's)."""
    if not isinstance(fields, dict):
        return None, "its record is not a mapping"
    schema = getattr(graph, "context_schema", None)
    if isinstance(schema, type) and _is_class_schema(schema):
        kind: Any = schema
    elif type_spec == "builtins:dict" or (schema is not None and not _is_class_schema(schema)):
        return fields, None
    else:
        try:
            kind = load_spec(type_spec, "context class")
        except AgentDebugError as exc:
            return None, f"which this process cannot import: {exc}"
        if not (isinstance(kind, type) and _is_class_schema(kind)):
            return None, "not a dataclass or a pydantic model"
    try:
        return _made(kind, fields), None
    except Exception as exc:
        return None, f"its record makes no {kind.__name__}: {type(exc).__name__}: {exc}"


def _is_class_schema(kind: type) -> bool:
    return dataclasses.is_dataclass(kind) or hasattr(kind, "model_validate")


def checked_config(config: Any) -> dict[str, Any]:
    """``config=`` as given, refused now where the branch would fail on it only after
    it was made and stored: a ``recursion_limit`` that is not a whole number of 1 or
    more (``"10"`` read from the environment), ``configurable`` that is not a dict."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise TypeError(
            f"LangGraphRerunExecutor(config=...) takes a dict, not {type(config).__name__}"
        )
    limit = config.get("recursion_limit")
    if "recursion_limit" in config and (
        isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
    ):
        raise ValueError(
            "LangGraphRerunExecutor(config={'recursion_limit': ...}) takes a whole number "
            f">= 1, not {limit!r}"
        )
    given = config.get("configurable")
    if given is not None and not isinstance(given, dict):
        raise TypeError(
            "LangGraphRerunExecutor(config={'configurable': ...}) takes a dict, "
            f"not {type(given).__name__}"
        )
    return dict(config)
