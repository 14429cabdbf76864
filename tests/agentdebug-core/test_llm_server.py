"""The scripted OpenAI-compatible server, the dry-run answerer and the prompt loader."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import date, datetime
from enum import StrEnum
from importlib import resources
from string import Template
from typing import Any, Literal
from uuid import UUID

import openai
import pytest
from agentdebug.llm import LLMClient, LLMSettings, PromptError, load_prompt, render_prompt
from agentdebug.llm import prompts as prompts_module
from agentdebug.llm.testing import Reply, ScriptedServer, minimal_instance, schema_answerer
from pydantic import BaseModel, Field, create_model

HELLO = [{"role": "user", "content": "hello there"}]


def openai_client(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=5)


def create(client: openai.OpenAI, **kwargs: Any) -> Any:
    """A chat completion through the real client (loosely typed: the scripted
    server takes requests the typed signature does not describe)."""
    kwargs.setdefault("model", "m")
    kwargs.setdefault("messages", HELLO)
    return client.chat.completions.create(**kwargs)


# ------------------------------------------------------------------ server


def test_replies_are_shaped_like_openai_chat_completions() -> None:
    with ScriptedServer(["hi!", Reply("again", usage=(7, 3))], model="tiny") as server:
        client = openai_client(server)
        first = create(client, model="whatever")
        second = create(client, model="whatever")
    assert first.object == "chat.completion" and first.model == "tiny"
    assert first.choices[0].message.role == "assistant"
    assert first.choices[0].message.content == "hi!"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.prompt_tokens == 3  # count_tokens("hello there")
    assert first.usage.completion_tokens == 1
    assert first.usage.total_tokens == 4
    assert second.usage is not None
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (7, 3)
    assert [r["messages"] for r in server.requests] == [HELLO, HELLO]
    assert server.remaining == 0


def test_exhausted_script_is_a_clear_500() -> None:
    with ScriptedServer(["only one"]) as server:
        client = openai_client(server)
        create(client)
        with pytest.raises(openai.InternalServerError) as err:
            create(client)
    assert err.value.status_code == 500
    assert "script is exhausted" in str(err.value.message)


def test_requests_are_validated_like_openai() -> None:
    with ScriptedServer(["never used"]) as server:
        client = openai_client(server)
        with pytest.raises(openai.BadRequestError, match="messages"):
            create(client, messages=[])
        with pytest.raises(openai.BadRequestError, match="model"):
            create(client, model="")
        req = urllib.request.Request(
            server.base_url + "/chat/completions", data=b"{oops", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as http_err:
            urllib.request.urlopen(req, timeout=5)
        assert http_err.value.code == 400
        body = json.loads(http_err.value.read())
        assert body["error"]["type"] == "invalid_request_error"
        assert server.remaining == 1


def test_models_endpoint_and_unknown_routes() -> None:
    with ScriptedServer([], model="scripted-7b") as server:
        client = openai_client(server)
        assert [m.id for m in client.models.list()] == ["scripted-7b"]
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="m", input="x")


def test_error_replies_use_openai_error_shape_and_headers() -> None:
    with ScriptedServer([Reply("slow down", status=429, headers={"Retry-After": "3"})]) as server:
        with pytest.raises(openai.RateLimitError) as err:
            create(openai_client(server))
    assert err.value.response.headers["retry-after"] == "3"
    assert err.value.body == {
        "message": "slow down",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }


def test_json_schema_unsupported_like_llama_cpp() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with ScriptedServer(['{"a": 1}'], supports_json_schema=False) as server:
        client = openai_client(server)
        with pytest.raises(openai.InternalServerError):
            create(
                client,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "A", "schema": schema},
                },
            )
        ok = create(client, response_format={"type": "json_object", "schema": schema})
    assert ok.choices[0].message.content == '{"a": 1}'


def test_callable_script_sees_each_request_and_can_fail() -> None:
    def answer(request: dict[str, Any]) -> str:
        if request["messages"][-1]["content"] == "boom":
            raise RuntimeError("no idea")
        return str(request["messages"][-1]["content"]).upper()

    with ScriptedServer(answer) as server:
        client = openai_client(server)
        reply = create(client)
        assert reply.choices[0].message.content == "HELLO THERE"
        with pytest.raises(openai.InternalServerError, match="no idea"):
            create(client, messages=[{"role": "user", "content": "boom"}])


# ------------------------------------------------------------- dry runs


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Quote(BaseModel):
    step: int = Field(ge=1)
    text: str = Field(min_length=3)


class Inner(BaseModel):
    color: Color
    when: datetime
    day: date
    ident: UUID


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list)


class Everything(BaseModel):
    kind: Literal["attribution"]
    half: Literal["first", "second", "unclear"]
    step: int = Field(gt=2, le=9)
    score: float = Field(gt=0.0, lt=1.0)
    ratio: float = Field(ge=-5.0, le=-1.0)
    quotes: list[Quote] = Field(min_length=2)
    tags: list[str]
    inner: Inner
    maybe: Inner | None
    optional_note: str | None = None
    mapping: dict[str, int]
    pair: tuple[int, str]
    tree: Node
    either: Quote | Color
    flag: bool


def narrowed() -> type[BaseModel]:
    """Like the strategies' answer schemas: enums built at run time."""
    agents: Any = Literal["planner", "coder"]
    steps: Any = Literal[3, 5, 8]
    modes: Any = Literal["a.b", "c.d"] | None
    return create_model(
        "Attribution",
        agent=(agents, ...),
        step=(steps, ...),
        failure_mode=(modes, None),
        confidence=(float, Field(ge=0.0, le=1.0)),
    )


@pytest.mark.parametrize("model", [Everything, Quote, Node, narrowed()])
def test_minimal_instance_validates(model: type[BaseModel]) -> None:
    value = minimal_instance(model.model_json_schema())
    model.model_validate(value)
    assert minimal_instance(model.model_json_schema()) == value  # deterministic


def test_minimal_instance_is_minimal() -> None:
    value = minimal_instance(Everything.model_json_schema())
    assert value["kind"] == "attribution" and value["half"] == "first"
    assert value["step"] == 3 and 0 < value["score"] < 1 and value["ratio"] == -5.0
    assert value["quotes"] == [{"step": 1, "text": "xxx"}] * 2 and value["tags"] == []
    assert "optional_note" not in value and value["flag"] is False


@pytest.mark.parametrize("form", ["json_schema", "json_object", "text"])
def test_schema_answerer_through_the_client_in_every_form(form: str) -> None:
    with ScriptedServer(schema_answerer) as server:
        settings = LLMSettings.model_validate(
            {
                "model": "scripted",
                "base_url": server.base_url,
                "response_format": form,
                "cache": False,
            }
        )
        answer = LLMClient(settings).structured(
            messages=HELLO, schema=Everything, strategy="dry-run"
        )
    assert answer.value.kind == "attribution" and len(answer.value.quotes) == 2


def test_schema_answerer_without_a_schema() -> None:
    assert schema_answerer({"model": "m", "messages": HELLO}).content == "{}"


def test_serve_forever_prints_its_url_and_answers() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # (Python installs its Ctrl-C handler only where SIGINT is not ignored, and a
    # shell's background job, `pytest ... &`, starts with it ignored: the child would
    # never stop on the test's SIGINT, the "hang under load" seen before)
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"from agentdebug.llm.testing import serve_forever; serve_forever({port})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in line
        client = openai.OpenAI(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
        reply = create(
            client,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Quote", "schema": Quote.model_json_schema()},
            },
        )
        assert Quote.model_validate_json(reply.choices[0].message.content or "").step == 1
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # where it hangs: faulthandler's dump on SIGABRT
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"serve_forever did not stop on Ctrl-C:\n{err}")
    assert proc.returncode == 0


# ----------------------------------------------------------------- prompts


def test_render_prompt_fills_placeholders() -> None:
    text = render_prompt("_test", name="Ada", thing="the answer", unused="fine")
    assert text == 'Hello Ada. Answer with {"ok": true} for the answer; it costs $5.\n'
    assert load_prompt("_test").startswith("Hello $name.")


def test_render_prompt_missing_value_names_it() -> None:
    with pytest.raises(PromptError, match=r"'_test' needs a value for \$thing"):
        render_prompt("_test", name="Ada")


def test_unknown_prompt_names_the_file() -> None:
    with pytest.raises(PromptError, match=r"no_such_prompt\.txt"):
        load_prompt("no_such_prompt")
    with pytest.raises(PromptError, match="bad prompt name"):
        load_prompt("../config")


def test_stray_dollar_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts_module, "load_prompt", lambda name: "costs $ 5 for $who")
    with pytest.raises(PromptError, match="not a placeholder"):
        render_prompt("broken", who="me")


def test_every_shipped_prompt_is_a_valid_template() -> None:
    folder = resources.files("agentdebug.llm.prompts")
    names = [p.name[: -len(".txt")] for p in folder.iterdir() if p.name.endswith(".txt")]
    assert "_test" in names
    for name in names:
        assert Template(load_prompt(name)).is_valid(), name


def test_scripted_server_on_a_taken_port_is_a_usage_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "agentdebug", "scripted-server", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 2
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in proc.stderr
    assert "internal error" not in proc.stderr
