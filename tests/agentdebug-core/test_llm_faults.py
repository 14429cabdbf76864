"""The model client against servers that misbehave: cut-off reasoning, two answers,
transient 500s, no usage, long Retry-After, spent quotas, dead configurations.
Each drives the real client over real HTTP and checks what a user would notice."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

import pytest
from agentdebug.audit import audit_scope
from agentdebug.errors import ConfigError
from agentdebug.llm import (
    Budget,
    BudgetExceeded,
    LLMCallFailed,
    LLMClient,
    LLMSettings,
    MalformedAnswer,
    budget_scope,
    load_settings,
    use_settings,
)
from agentdebug.llm import client as client_module
from agentdebug.llm.testing import Reply, ScriptedServer, error_body
from agentdebug.recover import ReflexionRecoverer
from agentdebug.recover.reflexion import ReflexionAnswer
from agentdebug.schema import DiagnosticReport
from pydantic import BaseModel, Field
from toy_agent import failing_run


class Verdict(BaseModel):
    half: Literal["first", "second", "unclear"]
    reason: str
    confidence: float = Field(ge=0.0, le=1.0)


GOOD = '{"half": "first", "reason": "step 2 misread the tool output", "confidence": 0.8}'
DRAFT = '{"half": "second", "reason": "a first guess", "confidence": 1.0}'
ASK = [{"role": "user", "content": "Which half holds the decisive error?"}]


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    asked: list[float] = []
    monkeypatch.setattr(client_module, "sleep", asked.append)
    return asked


def client_for(server: ScriptedServer, **kw: Any) -> LLMClient:
    return LLMClient(LLMSettings(model="test-model", base_url=server.base_url, cache=False, **kw))


def ask(client: LLMClient) -> Any:
    return client.structured(messages=ASK, schema=Verdict, strategy="test", purpose="halve")


def no_usage(content: str) -> Reply:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}  # fmt: skip
    return Reply(raw_body=json.dumps(body))


# ------------------------------------------------------------ reading answers


def test_a_draft_inside_unfinished_reasoning_is_never_the_answer() -> None:
    cut = Reply(f"<think>Let me draft an answer: {DRAFT} Hmm, no, the real", finish_reason="length")
    with ScriptedServer([cut, cut]) as server:
        with pytest.raises(MalformedAnswer) as caught:
            ask(client_for(server))
    assert "unfinished <think>" in str(caught.value)
    assert "cut off at the output token limit" in str(caught.value)


def test_an_answer_cut_off_at_the_token_limit_is_not_accepted() -> None:
    cut = Reply(f"{DRAFT} but wait, the final answer", finish_reason="length")
    with ScriptedServer([cut, GOOD]) as server:
        answer = ask(client_for(server))
        assert len(server.requests) == 2  # a repair round, not the cut answer
    assert answer.value.half == "first"


def test_of_two_objects_in_prose_the_last_is_the_answer() -> None:
    text = f"My first guess was {DRAFT} but after checking again, my final answer is:\n{GOOD}"
    with ScriptedServer([text]) as server:
        answer = ask(client_for(server))
    assert answer.value.half == "first" and answer.value.confidence == 0.8


def test_whitespace_only_required_text_is_malformed() -> None:
    blank = json.dumps({"reflection": " ", "directive": "\n "})
    with ScriptedServer([blank, blank]) as server:
        client = client_for(server)
        with pytest.raises(MalformedAnswer) as caught:
            client.structured(messages=ASK, schema=ReflexionAnswer, strategy="reflexion")
        assert len(server.requests) == 2  # one repair round, as for any bad answer
    assert "reflection: must not be blank" in str(caught.value)


def test_reflexion_refuses_a_blank_reflection(tmp_path: Path) -> None:
    from agentdebug import AgentDebug

    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    report: DiagnosticReport = dbg.diagnose(run)
    blank = json.dumps({"reflection": "   ", "directive": "   "})
    settings = LLMSettings(model="m", base_url="http://127.0.0.1:1/v1", cache=False)
    with ScriptedServer([blank, blank]) as server:
        settings = settings.model_copy(update={"base_url": server.base_url})
        with use_settings(settings), pytest.raises(MalformedAnswer):
            ReflexionRecoverer().recover(run, report)


def test_a_huge_bad_answer_is_not_echoed_whole_in_the_repair_request() -> None:
    junk = "lorem ipsum " * 250_000  # 3 MB
    with ScriptedServer([junk, GOOD]) as server:
        ask(client_for(server))
        repair = server.requests[1]["messages"]
    echoed = next(m["content"] for m in repair if m["role"] == "assistant")
    assert len(echoed) < 5_000 and "more characters cut" in echoed


# ---------------------------------------------------------------- the server


def test_transient_500s_keep_the_structured_output_form() -> None:
    with ScriptedServer([Reply(status=500), Reply(status=500), GOOD, GOOD]) as server:
        client = client_for(server)
        with audit_scope() as log:
            ask(client)
        ask(client)
        forms = [r["response_format"]["type"] for r in server.requests]
    assert forms == ["json_schema"] * 4
    assert client.response_form == "json_schema"
    assert not any("rejected" in (e.detail or "") for e in log.entries)


def test_token_budget_holds_when_the_server_reports_no_usage() -> None:
    with ScriptedServer(lambda _request: no_usage(GOOD)) as server:
        client = client_for(server)
        with budget_scope(Budget(max_tokens=120)), audit_scope() as log:
            with pytest.raises(BudgetExceeded):
                for _ in range(20):
                    ask(client)
        sent = len(server.requests)
    assert 1 <= sent <= 4
    notes = [e.detail or "" for e in log.entries if e.stage == "note"]
    assert notes == [client_module.ESTIMATED_NOTE]


def test_a_budget_that_stops_retries_names_the_server_error() -> None:
    overloaded = Reply("The engine is currently overloaded", status=503)
    with ScriptedServer([overloaded] * 5) as server:
        with budget_scope(Budget(max_calls=2)), pytest.raises(BudgetExceeded) as caught:
            ask(client_for(server))
    text = str(caught.value)
    assert text.startswith("HTTP 503: The engine is currently overloaded")
    assert "2 attempts" in text and "retries stopped by the budget" in text


def test_a_retry_after_past_the_cap_fails_at_once(sleeps: list[float]) -> None:
    slow_down = Reply(status=429, headers={"Retry-After": "3600"})
    with ScriptedServer([slow_down] * 5) as server:
        with pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server))
        assert len(server.requests) == 1
    assert sleeps == []
    assert "wait 3600 s" in str(caught.value) and "try again later" in str(caught.value)


def test_a_spent_quota_is_not_retried(sleeps: list[float]) -> None:
    body = error_body(429, "You exceeded your current quota", code="insufficient_quota")
    with ScriptedServer([Reply(status=429, raw_body=json.dumps(body))] * 5) as server:
        with pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server))
        assert len(server.requests) == 1
    assert sleeps == []
    assert "quota is used up" in str(caught.value)


def test_a_long_retry_wait_is_said_on_stderr(caplog: pytest.LogCaptureFixture) -> None:
    busy = Reply(status=503, headers={"Retry-After": "30"})
    with ScriptedServer([busy, GOOD]) as server, caplog.at_level(logging.WARNING):
        ask(client_for(server))
    (line,) = [r.getMessage() for r in caplog.records if r.name == "agentdebug.llm.client"]
    assert "HTTP 503" in line and "waiting 30 s before retry 1 of 4" in line


def test_a_200_carrying_an_error_keeps_the_servers_message() -> None:
    body = {"error": {"message": "Provider returned error: model is overloaded upstream"}}
    with ScriptedServer([Reply(raw_body=json.dumps(body))] * 2) as server:
        with pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server, max_retries=1))
    assert "model is overloaded upstream" in str(caught.value)


def test_a_web_page_for_an_answer_is_not_retried_and_the_base_url_is_named() -> None:
    """A base URL that serves a web page (an HTML login or docs page with status 200)
    answers every retry the same: one request, and the error says what to check
    (before, five requests and backoff waits)."""
    page = Reply(raw_body="<!doctype html><html><body>Sign in</body></html>",
                 headers={"Content-Type": "text/html"})  # fmt: skip
    with ScriptedServer([page] * 5) as server:
        with pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server))
        assert len(server.requests) == 1
        url = server.base_url
    text = str(caught.value)
    assert "the server did not send JSON" in text and f"at {url}" in text
    assert "check that the base URL is the API's" in text


_OTHER_APIS = {
    "anthropic": (
        {"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
         "content": [{"type": "text", "text": "hi"}]},
        "Anthropic Messages format", "https://api.anthropic.com/v1/",
    ),
    "ollama": (
        {"model": "llama3", "message": {"role": "assistant", "content": "hi"}, "done": True},
        "Ollama's own format", "http://HOST:11434/v1",
    ),
    "gemini": (
        {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
        "Gemini's generateContent format", "/v1beta/openai/",
    ),
    "responses": (
        {"id": "resp_1", "object": "response", "output": [{"type": "message"}]},
        "OpenAI Responses API", "serves /chat/completions",
    ),
    "models-list": (
        {"object": "list", "data": [{"id": "m", "object": "model"}]},
        "with a list of objects (as /models does)", "check the base URL",
    ),
    "json-array": ([{"generated_text": "hi"}], "with a JSON list", "serves /chat/completions"),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(_OTHER_APIS))
def test_another_apis_answer_is_named_and_not_retried(shape: str) -> None:
    """A base URL at another API's endpoint (Anthropic's /v1/messages, Ollama's
    /api/chat, ...) answers 200 with JSON of its own shape, the same every time:
    one request, and the error says which API answered and where the compatible
    one is (before: retried with backoff, then "no choices[0].message")."""
    body, said, hint = _OTHER_APIS[shape]
    with ScriptedServer([Reply(raw_body=json.dumps(body))] * 5) as server:
        with audit_scope() as log, pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server))
        assert len(server.requests) == 1
    text = str(caught.value)
    assert said in text and hint in text and caught.value.status == 200
    assert [e.outcome for e in log.entries] == ["error"]


# ----------------------------------------------------------- configuration


def test_a_404_names_the_endpoint_and_model_and_suggests_v1() -> None:
    with ScriptedServer([Reply(status=404)]) as server:
        with pytest.raises(LLMCallFailed) as caught:
            ask(client_for(server))
        url = server.base_url
    text = str(caught.value)
    assert f"model 'test-model' at {url}" in text
    assert "base URL ends in /v1" in text


def test_after_a_401_later_calls_fail_at_once_without_sending() -> None:
    with ScriptedServer([Reply(status=401)] * 3) as server:
        client = client_for(server)
        with pytest.raises(LLMCallFailed) as first:
            ask(client)
        with pytest.raises(LLMCallFailed) as second:
            ask(client)
        assert len(server.requests) == 1
    assert str(second.value) == str(first.value) and "check the API key" in str(first.value)
    assert "api_key in [llm] of the config file" in str(first.value)  # (where it may be set)


def test_a_base_url_without_a_scheme_is_a_config_error_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"model": "m", "base_url": "127.0.0.1:18080/v1"})
    assert "needs a scheme: http://127.0.0.1:18080/v1" in str(caught.value)
    assert "Value error" not in str(caught.value)
