"""A local OpenAI-compatible server that answers from a script.

Tests drive the real ``openai`` client against it over real HTTP; users run it
(``agentdebug scripted-server``) for dry runs of the whole model path. Nothing
here is imported by the diagnosis code.

    with ScriptedServer(['{"half": "first"}', Reply(status=429)]) as server:
        settings = LLMSettings(model="scripted", base_url=server.base_url)
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentdebug.llm.answers import SCHEMA_MARKER
from agentdebug.tokens import count_tokens


@dataclass
class Reply:
    """One scripted response.

    ``content`` is the assistant message (for an error status: the error message);
    ``raw_body`` replaces the whole body verbatim (e.g. broken JSON); ``usage`` is
    (prompt, completion) tokens, by default counted from the messages and content;
    ``refusal`` is the message's refusal (OpenAI's field for a declined request,
    sent with ``content`` null) and ``finish_reason`` the choice's.
    """

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    raw_body: str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = None
    refusal: str | None = None
    finish_reason: str = "stop"


Answerer = Callable[[dict[str, Any]], "Reply | str"]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    kind, default_code = _ERROR_TYPES.get(status, ("server_error", None))
    return {
        "error": {"message": message, "type": kind, "param": None, "code": code or default_code}
    }


class ScriptedServer:
    """``script``: replies consumed in order (a str is a 200 with that content), or a
    function from the request body to a reply.

    ``requests`` holds every JSON body received; ``max_in_flight`` the most chat
    requests handled at once. With ``supports_json_schema=False`` the server
    refuses ``response_format`` json_schema with HTTP 500, as llama.cpp's does.
    """

    def __init__(
        self,
        script: Sequence[Reply | str] | Answerer,
        *,
        supports_json_schema: bool = True,
        model: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.model = model
        self.supports_json_schema = supports_json_schema
        self._answerer: Answerer | None = script if callable(script) else None
        self._queue: list[Reply | str] = [] if callable(script) else list(script)
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._host = host
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------- lifecycle

    def start(self) -> ScriptedServer:
        if self._httpd is not None:
            return self
        handler = type("_Handler", (_Handler,), {"scripted": self})
        httpd = _QuietServer((self._host, self._port), handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the JSON bodies received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used (0 for a function script)."""
        with self._lock:
            return len(self._queue)

    # -------------------------------------------------------------- answering

    def _note(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if self._answerer is not None:
            try:
                answer = self._answerer(body)
            except Exception as exc:
                return Reply(f"scripted answerer failed: {type(exc).__name__}: {exc}", status=500)
        else:
            with self._lock:
                if not self._queue:
                    return Reply(
                        "scripted server: the script is exhausted (every scripted reply "
                        "was used and another request arrived)",
                        status=500,
                    )
                answer = self._queue.pop(0)
        return Reply(content=answer) if isinstance(answer, str) else answer

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        if reply.usage is not None:
            prompt, completion = reply.usage
        else:
            prompt = sum(
                count_tokens(_text(m.get("content")))
                for m in body["messages"]
                if isinstance(m, dict)
            )
            completion = count_tokens(reply.content or "")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": reply.content,
                        "refusal": reply.refusal,
                    },
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that hung up (timeouts are part of the script)
        super().handle_error(request, client_address)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedServer
    server_version = "agentdebug-scripted/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (
            body
            if isinstance(body, bytes)
            else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        )
        try:
            self.send_response(status)
            sent = {k.lower() for k in (headers or {})}
            if "content-type" not in sent:
                self.send_header("Content-Type", "application/json")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (a timeout test); nothing to tell it

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {
                "id": self.scripted.model,
                "object": "model",
                "created": 0,
                "owned_by": "agentdebug",
            }
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, error_body(404, f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, error_body(404, f"no route POST {self.path}", "not_found"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            self._send(400, error_body(400, "We could not parse the JSON body of your request."))
            return
        if not isinstance(body, dict):
            self._send(400, error_body(400, "The request body must be a JSON object."))
            return
        self.scripted._note(body)
        problem = _request_problem(body)
        if problem:
            self._send(400, error_body(400, problem))
            return
        fmt = body.get("response_format")
        if (
            not self.scripted.supports_json_schema
            and isinstance(fmt, dict)
            and fmt.get("type") == "json_schema"
        ):
            # llama.cpp's server: a bare 500 for a response_format it does not know.
            self._send(
                500,
                {
                    "error": {
                        "code": 500,
                        "message": "Unsupported response format type",
                        "type": "server_error",
                    }
                },
            )
            return
        scripted = self.scripted
        with scripted._lock:
            scripted.in_flight += 1
            scripted.max_in_flight = max(scripted.max_in_flight, scripted.in_flight)
        try:
            reply = scripted._next_reply(body)
            if reply.delay > 0:
                time.sleep(reply.delay)
        finally:
            # Counted out before the answer goes back, so a client that sends its
            # next request on receipt is never seen overlapping this one.
            with scripted._lock:
                scripted.in_flight -= 1
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, reply.headers)
        elif reply.status != 200:
            message = reply.content or HTTPStatus(reply.status).phrase
            self._send(reply.status, error_body(reply.status, message), reply.headers)
        else:
            self._send(200, scripted._completion(body, reply), reply.headers)


def _request_problem(body: dict[str, Any]) -> str | None:
    """What OpenAI would say about a malformed chat request, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' is a required property and must be a non-empty array"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            return f"Invalid value for 'messages[{i}]': each message needs a 'role'"
    return None


# ------------------------------------------------------------------- dry runs


def schema_of_request(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for: in response_format (json_schema, or
    json_object's "schema"), else after :data:`SCHEMA_MARKER` in a system message."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            if isinstance(schema, dict):
                return schema
        if isinstance(fmt.get("schema"), dict):
            return dict(fmt["schema"])
    for message in request.get("messages") or []:
        content = _text(message.get("content")) if isinstance(message, dict) else ""
        at = content.find(SCHEMA_MARKER)
        if at < 0:
            continue
        start = content.find("{", at)
        if start < 0:
            continue
        try:
            schema, _ = json.JSONDecoder().raw_decode(content, start)
        except ValueError:
            continue
        if isinstance(schema, dict):
            return schema
    return None


def schema_answerer(request: dict[str, Any]) -> Reply:
    """A minimal valid instance of the schema the request asks for (``{}`` if it
    names none): required fields only, empty strings, zeros or minimums, false,
    first enum values, empty lists unless minItems. Deterministic."""
    schema = schema_of_request(request)
    value: Any = {} if schema is None else minimal_instance(schema)
    return Reply(content=json.dumps(value))


def minimal_instance(schema: dict[str, Any]) -> Any:
    """A small value that validates against ``schema`` (patterns are not honoured)."""
    return _Minimal(schema).build(schema, 0)


class _Minimal:
    MAX_DEPTH = 40

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}

    def build(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > self.MAX_DEPTH:
            return None
        if "$ref" in schema:
            merged = {
                **self.resolve(schema["$ref"]),
                **{k: v for k, v in schema.items() if k != "$ref"},
            }
            return self.build(merged, depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                # The first option that is not null: a fuller answer for dry runs.
                chosen = next((o for o in options if not _is_null(o)), options[0])
                return self.build(chosen, depth + 1)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged = {}
            for part in schema["allOf"]:
                if isinstance(part, dict) and "$ref" in part:
                    part = self.resolve(part["$ref"])
                merged.update(part if isinstance(part, dict) else {})
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            return self.build({**merged, **rest}, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            if "properties" in schema or "required" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
        if kind == "object":
            props = schema.get("properties") or {}
            return {
                name: self.build(props.get(name, {}), depth + 1)
                for name in schema.get("required") or []
            }
        if kind == "array":
            return self._array(schema, depth)
        if kind == "string":
            return _string(schema)
        if kind == "integer":
            return _number(schema, integer=True)
        if kind == "number":
            return _number(schema, integer=False)
        if kind == "boolean":
            return False
        return None

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems") or []
        out = [self.build(item, depth + 1) for item in prefix]
        wanted = int(schema.get("minItems") or 0)
        items = schema.get("items")
        while len(out) < wanted:
            out.append(self.build(items if isinstance(items, dict) else {}, depth + 1))
        return out


def _is_null(option: Any) -> bool:
    return isinstance(option, dict) and option.get("type") == "null"


_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00",
    "duration": "PT0S",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
}


def _string(schema: dict[str, Any]) -> str:
    fixed = _FORMATS.get(str(schema.get("format")))
    if fixed is not None:
        return fixed
    return "x" * int(schema.get("minLength") or 0)


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    lo, lo_ex, hi, hi_ex = (
        schema.get(k) for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
    )

    def fits(v: float) -> bool:
        return (
            (lo is None or v >= lo)
            and (lo_ex is None or v > lo_ex)
            and (hi is None or v <= hi)
            and (hi_ex is None or v < hi_ex)
        )

    lows = [b for b in (lo, lo_ex) if isinstance(b, int | float)]
    highs = [b for b in (hi, hi_ex) if isinstance(b, int | float)]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    candidates: list[float] = [0]
    if low is not None:
        candidates += [low, low + 1]
    if high is not None:
        candidates += [high, high - 1]
    if low is not None and high is not None:
        candidates.append((low + high) / 2)
    for c in candidates:
        if integer:
            for whole in (math.ceil(c), math.floor(c)):
                if fits(whole):
                    return int(whole)
        elif fits(c):
            return float(c)
    return int(low or 0) if integer else float(low or 0)


def serve_forever(
    port: int, answerer: Answerer = schema_answerer, *, host: str = "127.0.0.1"
) -> None:
    """Run a scripted server on ``port`` until interrupted, printing its base URL."""
    server = ScriptedServer(answerer, host=host, port=port).start()
    print(f"scripted OpenAI-compatible server at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        # short sleeps: Linux may deliver the Ctrl-C to a server thread, and Python
        # runs its handler only when the main thread wakes (a long sleep hung a stop)
        while True:
            time.sleep(0.25)
    except KeyboardInterrupt:
        pass
    finally:  # (bounded: a Ctrl-C must end the command even if a stop hangs)
        stopping = threading.Thread(target=server.stop, name="scripted-server-stop", daemon=True)
        stopping.start()
        stopping.join(timeout=5)
