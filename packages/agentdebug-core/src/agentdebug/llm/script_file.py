"""Script files for ``agentdebug scripted-server --script FILE``, and its request
log (``--log FILE``): a dry run of the model path that says something.

Without a script the server answers every request with a minimal valid instance
of the JSON schema it asks for (empty strings, confidence 0): the whole path runs,
and no answer means anything. A script gives the answers a user wants to try.

It is a JSON object whose keys name the structured answers agentdebug asks for,
by their schema's name (:data:`ASKED`: ``Attribution`` for one-pass attribution,
``StepVerdict``, ``HalfVerdict``, ``GlobalRead``, ``WindowAnswer``,
``JudgeAnswer``...; the log shows the name of every request; a name agentdebug
never asks for is refused, since it would never be given), each with one answer
(a JSON object, given every time it is asked for) or a list of them (given in
turn, the last again once they run out); ``"*"`` answers a name the script does
not hold, and a name neither holds gets the minimal instance. Or a JSON list: answers in turn whatever is asked. An answer
may be a reply of another kind instead: ``{"$status": 429, "$message": "slow
down", "$retry_after": 30, "$delay": 2}`` (an HTTP error, with a ``Retry-After``
header, or an answer late by ``$delay`` seconds;
``"$content"`` gives a raw text answer, not JSON).

The log is JSON lines, one a request: its time, the schema's name, the messages
and the answer given.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from pathlib import Path
from typing import Any

from agentdebug.llm.testing import Answerer, Reply, schema_answerer, schema_of_request

ANY = "*"
# the structured answers agentdebug asks a model for, by schema name (a test drives
# every model-backed stage through a server and checks that this is all of them)
ASKED = frozenset(
    {
        "Attribution",  # one-pass attribution (all-at-once; the router's)
        "StepVerdict",  # step-by-step
        "HalfVerdict",  # binary search, and DeepDebug's probe
        "FinalHalfVerdict",  # binary search's last step
        "GlobalRead",  # DeepDebug's first read
        "CrossAnswer",  # DeepDebug's cross-examination
        "WindowAnswer",  # error lifecycle, a window of the trace
        "FinalAnswer",  # error lifecycle, the attribution among survivors
        "JudgeAnswer",  # the LLM judge detector, and the rerun's LLM scorer
        "ReflexionAnswer",  # recoverers: reflexion
        "CriticAnswer",  # critic
        "ManualAnswer",  # automanual
    }
)
_REPLY_KEYS = frozenset({"$status", "$message", "$delay", "$content", "$retry_after"})


class ScriptError(ValueError):
    """A script file that cannot be used: names the file, the entry and what is wrong."""


def schema_name(request: dict[str, Any]) -> str | None:
    """The name of the structured answer a request asks for (its json_schema's name,
    else the title of the schema its instructions give), if any."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        name = (fmt.get("json_schema") or {}).get("name")
        if isinstance(name, str):
            return name
    schema = schema_of_request(request)
    title = schema.get("title") if schema else None
    return title if isinstance(title, str) else None


def load_script(path: Path) -> Answerer:
    """The answerer a script file describes (see the module's doc); raises
    :class:`ScriptError` naming the file and the entry at fault."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))  # (a BOM, as editors write)
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ScriptError(f"{path}: not a JSON script ({exc})") from None
    if isinstance(doc, list):
        return _ByName({ANY: _replies(path, "the list", doc)})
    if not isinstance(doc, dict) or not doc:
        raise ScriptError(
            f"{path}: a script is a JSON object of answers by schema name, or a list of "
            f"answers; got {type(doc).__name__ if doc else 'an empty one'}"
        )
    by_name: dict[str, list[Reply]] = {}
    for name, given in doc.items():
        entry = f"entry {name!r}"
        if name != ANY and name not in ASKED:
            near = difflib.get_close_matches(name, sorted(ASKED), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ScriptError(
                f"{path}: {entry} is not an answer agentdebug asks for{hint}; the names: "
                f"{', '.join(sorted(ASKED))}, or {ANY!r} for any"
            )
        by_name[name] = _replies(path, entry, given if isinstance(given, list) else [given])
    return _ByName(by_name)


def _replies(path: Path, entry: str, answers: list[Any]) -> list[Reply]:
    if not answers:
        raise ScriptError(f"{path}: {entry} is an empty list; give one answer at least")
    return [_reply(path, entry if len(answers) == 1 else f"{entry}[{i}]", a)
            for i, a in enumerate(answers)]  # fmt: skip


def _reply(path: Path, where: str, answer: Any) -> Reply:
    if not isinstance(answer, dict):
        raise ScriptError(
            f"{path}: {where} is {type(answer).__name__}, not a JSON object (an answer, "
            'or a reply such as {"$status": 429})'
        )
    marked = {k for k in answer if isinstance(k, str) and k.startswith("$")}
    if not marked:
        return Reply(content=json.dumps(answer))
    unknown = sorted(marked - _REPLY_KEYS)
    if unknown or len(marked) != len(answer):
        odd = unknown or sorted(set(answer) - marked)
        raise ScriptError(
            f"{path}: {where}: a reply takes only {', '.join(sorted(_REPLY_KEYS))}; "
            f"got {', '.join(map(str, odd))}"
        )
    status, delay = answer.get("$status", 200), answer.get("$delay", 0)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ScriptError(f"{path}: {where}: $status must be an HTTP status, got {status!r}")
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 3600:
        raise ScriptError(f"{path}: {where}: $delay must be seconds, 0 to 3600, got {delay!r}")
    wait = answer.get("$retry_after")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float))):
        raise ScriptError(f"{path}: {where}: $retry_after must be seconds, got {wait!r}")
    text = answer.get("$content", answer.get("$message"))
    if text is not None and not isinstance(text, str):
        raise ScriptError(f"{path}: {where}: $content and $message are text, got {text!r}")
    if status == 200 and text is None:
        raise ScriptError(f"{path}: {where}: a reply with no $status gives $content")
    headers = {"Retry-After": f"{wait:g}"} if wait is not None else {}
    return Reply(content=text if text is not None else "scripted error", status=status,
                 delay=float(delay), headers=headers)  # fmt: skip


class _ByName:
    """Answers by the schema asked for, each list in turn (a script that is a list:
    all under ``"*"``)."""

    def __init__(self, by_name: dict[str, list[Reply]]) -> None:
        self._by_name = by_name
        self._given: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        name = schema_name(request)
        key = name if name in self._by_name else ANY
        replies = self._by_name.get(key)
        if replies is None:
            return schema_answerer(request)
        with self._lock:
            n = self._given.get(key, 0)
            self._given[key] = n + 1
        return replies[min(n, len(replies) - 1)]


def logged(answerer: Answerer, path: Path) -> Answerer:
    """``answerer``, each request and its answer appended to ``path`` as a JSON line."""
    lock = threading.Lock()
    path.parent.mkdir(parents=True, exist_ok=True)

    def answer(request: dict[str, Any]) -> Reply | str:
        reply = answerer(request)
        given = reply if isinstance(reply, Reply) else Reply(content=reply)
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "schema": schema_name(request),
            "messages": request.get("messages"),
            "answer": given.content if given.status == 200 else None,
            "status": given.status,
        }
        with lock, path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
        return reply

    return answer
