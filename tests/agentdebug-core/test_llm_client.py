"""The model client against a real local HTTP server, through the real openai client."""

from __future__ import annotations

import json
import logging
import socket
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from agentdebug.audit import audit_scope
from agentdebug.llm import (
    Budget,
    BudgetExceeded,
    LLMCallFailed,
    LLMClient,
    LLMSettings,
    MalformedAnswer,
    ModelRefused,
    NoModelConfigured,
    budget_scope,
    get_client,
    use_settings,
)
from agentdebug.llm import client as client_module
from agentdebug.llm.testing import Reply, ScriptedServer
from agentdebug.schema import AuditEntry, Cost
from pydantic import BaseModel, Field


class Verdict(BaseModel):
    half: Literal["first", "second", "unclear"]
    reason: str
    confidence: float = Field(ge=0.0, le=1.0)


GOOD = '{"half": "first", "reason": "step 2 misread the tool output", "confidence": 0.8}'
ASK = [
    {"role": "system", "content": "You are a careful debugger."},
    {"role": "user", "content": "Which half holds the decisive error?"},
]


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays the client asked for, without waiting for them."""
    asked: list[float] = []
    monkeypatch.setattr(client_module, "sleep", asked.append)
    return asked


def settings_for(server: ScriptedServer, **kw: Any) -> LLMSettings:
    return LLMSettings(model="test-model", base_url=server.base_url, **kw)


def ask(client: LLMClient, messages: list[dict[str, str]] = ASK, purpose: str = "halve") -> Any:
    return client.structured(
        messages=messages, schema=Verdict, strategy="binary-search", purpose=purpose
    )


def llm_entries(entries: list[AuditEntry]) -> list[AuditEntry]:
    return [e for e in entries if e.stage == "llm"]


# ----------------------------------------------------------------- answers


def test_structured_answer_with_server_usage() -> None:
    with ScriptedServer([Reply(GOOD, usage=(321, 12))]) as server:
        client = LLMClient(settings_for(server))
        with audit_scope() as log:
            answer = ask(client)
    assert answer.value == Verdict(
        half="first", reason="step 2 misread the tool output", confidence=0.8
    )
    assert (answer.raw, answer.input_tokens, answer.output_tokens) == (GOOD, 321, 12)
    assert (answer.cached, answer.attempts) == (False, 1)
    [entry] = log.entries
    assert entry.stage == "llm" and entry.strategy == "binary-search" and entry.outcome == "ok"
    assert (entry.model, entry.input_tokens, entry.output_tokens) == ("test-model", 321, 12)
    assert entry.prompt_hash is not None and len(entry.prompt_hash) == 16
    assert entry.detail is not None and entry.detail.startswith("halve")
    assert entry.latency_ms > 0 and not entry.cached
    # What was sent: settings' temperature and max_tokens, the json_schema form.
    [request] = server.requests
    assert request["model"] == "test-model" and request["temperature"] == 0.0
    assert request["max_tokens"] == 2048 and request["messages"] == ASK
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Verdict"
    assert fmt["json_schema"]["strict"] is False
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert log.cost == Cost(
        calls=1, input_tokens=321, output_tokens=12, latency_ms=entry.latency_ms
    )


def test_usage_absent_is_estimated_and_said_so() -> None:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": GOOD},
                         "finish_reason": "stop"}]}  # fmt: skip
    with ScriptedServer([Reply(raw_body=json.dumps(body))]) as server:
        with audit_scope() as log:
            answer = ask(LLMClient(settings_for(server)))
    assert answer.input_tokens > 0 and answer.output_tokens > 0
    (entry,) = llm_entries(log.entries)
    assert (entry.input_tokens, entry.output_tokens) == (answer.input_tokens, answer.output_tokens)
    assert "token counts estimated" in (entry.detail or "")
    notes = [e.detail for e in log.entries if e.stage == "note"]
    assert notes == [client_module.ESTIMATED_NOTE]


@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{GOOD}\n```",
        f"Here is my answer:\n\n{GOOD}\n\nI hope this helps.",
        f"<think>the {{first}} half? yes</think>\n```\n{GOOD}\n```",
        f"Sure. ```json\n{GOOD}```",
    ],
)
def test_fenced_and_prose_json_is_extracted(content: str) -> None:
    with ScriptedServer([content]) as server:
        answer = ask(LLMClient(settings_for(server)))
    assert answer.value.half == "first" and answer.raw == content


def test_invalid_answer_is_repaired_in_one_round() -> None:
    bad = '{"half": "middle", "reason": "x", "confidence": 0.5}'
    with ScriptedServer([Reply(bad, usage=(50, 5)), Reply(GOOD, usage=(70, 9))]) as server:
        with audit_scope() as log:
            answer = ask(LLMClient(settings_for(server)))
    assert answer.value.half == "first" and answer.raw == GOOD
    assert (answer.attempts, answer.input_tokens, answer.output_tokens) == (2, 120, 14)
    first, repair = server.requests
    assert repair["messages"][: len(first["messages"])] == first["messages"]
    assert repair["messages"][-2] == {"role": "assistant", "content": bad}
    assert repair["messages"][-1]["role"] == "user"
    assert "half" in repair["messages"][-1]["content"]
    assert "'first', 'second' or 'unclear'" in repair["messages"][-1]["content"]
    assert repair["response_format"] == first["response_format"]
    assert [e.outcome for e in log.entries] == ["malformed", "ok"]
    assert [(e.input_tokens, e.output_tokens) for e in log.entries] == [(50, 5), (70, 9)]
    assert log.cost.calls == 2 and log.cost.input_tokens == 120


def test_malformed_twice_raises_with_the_raw_text(tmp_path: Path) -> None:
    with ScriptedServer(["I think the first half.", "Still: the first half!", GOOD]) as server:
        client = LLMClient(settings_for(server))
        with audit_scope() as log, pytest.raises(MalformedAnswer) as err:
            ask(client)
        assert err.value.raw == "Still: the first half!"
        assert "no JSON object" in err.value.problem
        assert [e.outcome for e in log.entries] == ["malformed", "malformed"]
        # Nothing invalid was cached: asking again reaches the server.
        assert ask(client).value.half == "first"
        assert len(server.requests) == 3


def test_truncated_answer_says_so() -> None:
    with ScriptedServer(['{"half": "first", "rea', '{"half": "first", "reason": "r']) as server:
        with pytest.raises(MalformedAnswer, match="not valid JSON") as caught:
            ask(LLMClient(settings_for(server)))
        url = server.base_url
    assert f"at {url})" in str(caught.value)  # (errors name the model and base URL)


@pytest.mark.parametrize(
    ("replies", "said", "sent"),
    [
        (
            [Reply(refusal="I can't help with that.")],
            "refused to answer: I can't help with that.",
            1,
        ),
        ([Reply(finish_reason="content_filter")], "content filter stopped", 1),
        ([Reply("the first half"), Reply(refusal="No.")], "refused to answer: No.", 2),
    ],
    ids=["refusal", "content-filter", "refused-repair"],
)
def test_a_refusal_is_said_as_one_and_not_asked_again(
    replies: list[Reply], said: str, sent: int
) -> None:
    """A model that declines (``refusal`` with no content, or the server's content
    filter) raises ModelRefused in its words, with no repair round sent for it;
    before, it read as an empty answer that did not match the schema, asked again.
    Nothing is cached: the next question reaches the server."""
    with ScriptedServer([*replies, GOOD]) as server:
        client = LLMClient(settings_for(server))
        with audit_scope() as log, pytest.raises(ModelRefused, match=said):
            ask(client)
        assert len(server.requests) == sent
        assert log.entries[-1].outcome == "refused" and log.cost.calls == sent
        assert ask(client).value.half == "first"


def test_malformed_body_is_a_failed_attempt_and_retried(sleeps: list[float]) -> None:
    script = [Reply(raw_body="{not json"), Reply(raw_body='{"object": "nothing"}'), Reply(GOOD)]
    with ScriptedServer(script) as server:
        with audit_scope() as log:
            answer = ask(LLMClient(settings_for(server)))
    assert answer.value.half == "first" and answer.attempts == 3
    assert [e.outcome for e in log.entries] == ["retry", "retry", "ok"]
    assert "not a chat completion" in (log.entries[0].detail or "")
    assert len(sleeps) == 2


def test_malformed_body_that_persists_fails_with_status_200() -> None:
    with ScriptedServer([Reply(raw_body=b"\x00garbage")] * 3) as server:
        client = LLMClient(settings_for(server, max_retries=2))
        with pytest.raises(LLMCallFailed) as err:
            ask(client)
    assert (err.value.attempts, err.value.status) == (3, 200)
    assert "not a chat completion" in err.value.reason


# ----------------------------------------------------------------- retries


def test_retries_429_500_503_and_timeout_then_succeeds(sleeps: list[float]) -> None:
    script = [
        Reply("slow down", status=429, headers={"Retry-After": "2"}),
        Reply(status=500),
        Reply("overloaded", status=503),
        Reply(GOOD, delay=1.0),
        Reply(GOOD, usage=(400, 20)),
    ]
    with ScriptedServer(script) as server:
        client = LLMClient(settings_for(server, timeout=0.3))
        client._learned = "json_schema"  # a form already worked: a 500 is transient
        with audit_scope() as log:
            answer = ask(client)
    assert answer.value.half == "first" and answer.attempts == 5
    assert [e.outcome for e in log.entries] == ["retry"] * 4 + ["ok"]
    assert [(e.input_tokens, e.output_tokens) for e in log.entries] == [(0, 0)] * 4 + [(400, 20)]
    details = [e.detail or "" for e in log.entries]
    assert "HTTP 429, retrying in 2.0 s" in details[0]
    assert "HTTP 500" in details[1] and "HTTP 503" in details[2]
    assert "no answer within 0.3 s" in details[3]
    assert sleeps[0] == 2.0  # Retry-After honoured
    # Then exponential backoff with jitter: ceilings 1, 2, 4 s, jittered down to half.
    for delay, ceiling in zip(sleeps[1:], (1.0, 2.0, 4.0), strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert log.cost.calls == 5 and log.cost.input_tokens == 400


@pytest.mark.parametrize("header", ["Retry-After", "retry-after-ms"])
def test_a_retry_after_that_is_not_a_number_of_seconds_waits_the_usual_backoff(
    sleeps: list[float], header: str
) -> None:
    """``Retry-After: nan`` parses as a float but is no time: the usual backoff is
    waited (before, sleeping NaN seconds raised, and the call failed)."""
    script = [Reply("slow down", status=429, headers={header: "nan"}), Reply(GOOD)]
    with ScriptedServer(script) as server:
        answer = ask(LLMClient(settings_for(server)))
    assert answer.attempts == 2 and len(sleeps) == 1 and 0 < sleeps[0] <= 20.0


def test_gives_up_after_max_retries(sleeps: list[float]) -> None:
    with ScriptedServer([Reply("the engine is overloaded", status=503)] * 5) as server:
        client = LLMClient(settings_for(server, max_retries=2, response_format="json_schema"))
        with audit_scope() as log, pytest.raises(LLMCallFailed) as err:
            ask(client)
    assert (err.value.attempts, err.value.status) == (3, 503)
    assert err.value.reason == "the engine is overloaded"
    assert "3 attempts" in str(err.value)
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert [e.outcome for e in log.entries] == ["retry", "retry", "error"]


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(status: int, sleeps: list[float]) -> None:
    with ScriptedServer([GOOD, Reply("no such thing here", status=status)]) as server:
        client = LLMClient(settings_for(server))
        ask(client, purpose="first")
        with audit_scope() as log, pytest.raises(LLMCallFailed) as err:
            ask(client, [{"role": "user", "content": "another question"}])
    assert (err.value.attempts, err.value.status) == (1, status)
    assert err.value.reason == "no such thing here"
    assert len(server.requests) == 2 and sleeps == []
    assert [e.outcome for e in log.entries] == ["error"]


def test_unauthorised_is_final_even_on_the_first_call() -> None:
    with ScriptedServer([Reply("Incorrect API key provided", status=401)] * 3) as server:
        with pytest.raises(LLMCallFailed, match="Incorrect API key") as err:
            ask(LLMClient(settings_for(server)))
    assert err.value.attempts == 1 and len(server.requests) == 1


def test_unreachable_server_is_retried_then_fails(sleeps: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = LLMSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with audit_scope() as log, pytest.raises(LLMCallFailed) as err:
        ask(LLMClient(settings))
    assert (err.value.attempts, err.value.status) == (2, None)
    assert "cannot reach" in err.value.reason
    assert [e.outcome for e in log.entries] == ["retry", "error"] and len(sleeps) == 1


def test_backoff_is_capped() -> None:
    assert client_module.backoff_delay(30) <= 20.0
    assert client_module.backoff_delay(0, retry_after=500.0) == 60.0
    assert client_module.backoff_delay(0, retry_after=1.5) == 1.5


# ----------------------------------------------------------- response forms


def test_json_schema_rejected_falls_back_to_json_object_and_remembers() -> None:
    with ScriptedServer([GOOD, GOOD], supports_json_schema=False) as server:
        client = LLMClient(settings_for(server))
        with audit_scope() as log:
            first = ask(client)
            second = ask(client, [{"role": "user", "content": "and now?"}])
    assert first.value == second.value and client.response_form == "json_object"
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    fallback = server.requests[1]
    assert fallback["response_format"]["schema"]["properties"]["half"]["enum"] == [
        "first", "second", "unclear",
    ]  # fmt: skip
    # The weaker form also carries the schema in the (single) system message.
    assert [m["role"] for m in fallback["messages"]] == ["system", "user"]
    assert "matches this JSON schema" in fallback["messages"][0]["content"]
    assert [e.outcome for e in log.entries] == ["retry", "ok", "ok"]
    assert "response_format json_schema rejected" in (log.entries[0].detail or "")
    assert "falling back to json_object" in (log.entries[0].detail or "")
    assert first.attempts == 2 and second.attempts == 1


def test_both_json_forms_rejected_falls_back_to_schema_in_prompt() -> None:
    def server_without_structured_output(request: dict[str, Any]) -> Reply:
        if "response_format" in request:
            return Reply("'response_format' is not supported by this server", status=400)
        return Reply(GOOD)

    with ScriptedServer(server_without_structured_output) as server:
        client = LLMClient(settings_for(server))
        answer = ask(client)
        ask(client, [{"role": "user", "content": "again"}])
    assert answer.value.half == "first" and client.response_form == "text"
    kinds = [r.get("response_format", {}).get("type") for r in server.requests]
    assert kinds == ["json_schema", "json_object", None, None]
    assert "matches this JSON schema" in server.requests[2]["messages"][0]["content"]


def test_forced_form_is_used_directly_and_never_falls_back() -> None:
    with ScriptedServer([GOOD]) as server:
        ask(LLMClient(settings_for(server, response_format="json_object")))
    assert server.requests[0]["response_format"]["type"] == "json_object"
    with ScriptedServer([GOOD]) as server:
        ask(LLMClient(settings_for(server, response_format="text")))
    assert "response_format" not in server.requests[0]
    with ScriptedServer([Reply(status=500)] * 2, supports_json_schema=False) as server:
        with pytest.raises(LLMCallFailed) as err:
            ask(LLMClient(settings_for(server, response_format="json_schema", max_retries=1)))
    assert err.value.status == 500 and len(server.requests) == 2


def test_format_error_after_a_form_worked_still_falls_back_for_that_call() -> None:
    def picky(request: dict[str, Any]) -> Reply:
        fmt = request.get("response_format", {})
        if fmt.get("type") == "json_schema" and "picky" in request["messages"][-1]["content"]:
            return Reply("Invalid schema for response_format 'Verdict'", status=400)
        return Reply(GOOD)

    with ScriptedServer(picky) as server:
        client = LLMClient(settings_for(server))
        ask(client)
        ask(client, [{"role": "user", "content": "picky question"}])
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_schema", "json_object"]


# -------------------------------------------------------------------- cache


def test_second_identical_request_is_served_from_the_cache(tmp_path: Path) -> None:
    with ScriptedServer([Reply(GOOD, usage=(300, 30)), Reply(GOOD, usage=(1, 1))]) as server:
        settings = settings_for(server, cache_path=str(tmp_path / "c.db"))
        client = LLMClient(settings)
        with audit_scope() as log:
            live = ask(client)
            replay = ask(client)
        assert len(server.requests) == 1
        assert replay.cached and replay.value == live.value and replay.attempts == 0
        assert (replay.input_tokens, replay.output_tokens) == (300, 30)
        hit = log.entries[1]
        assert (
            hit.cached
            and hit.outcome == "ok"
            and (hit.input_tokens, hit.output_tokens) == (300, 30)
        )
        assert hit.prompt_hash == log.entries[0].prompt_hash
        cost = log.cost
        assert (cost.calls, cost.cached_calls) == (1, 1)
        assert (cost.input_tokens, cost.cached_input_tokens, cost.cached_output_tokens) == (
            300,
            300,
            30,
        )
        # The cache is on disk: a fresh client (a new process) finds it too.
        assert LLMClient(settings).structured(messages=ASK, schema=Verdict, strategy="other").cached
        # A different prompt misses.
        assert not ask(client, [{"role": "user", "content": "another"}]).cached
        assert len(server.requests) == 2


def test_cache_defaults_to_agentdebug_home(home: Path) -> None:
    with ScriptedServer([GOOD]) as server:
        client = LLMClient(settings_for(server))
        ask(client)
        assert ask(client).cached
    assert (home / "llm-cache.db").is_file()


def test_cache_off_always_asks() -> None:
    with ScriptedServer([GOOD, GOOD]) as server:
        client = LLMClient(settings_for(server, cache=False))
        assert not ask(client).cached and not ask(client).cached
    assert len(server.requests) == 2 and client.cache is None


def test_a_repaired_answer_is_cached_for_the_original_request() -> None:
    with ScriptedServer(['{"half": "?"}', GOOD]) as server:
        client = LLMClient(settings_for(server))
        ask(client)
        again = ask(client)
    assert again.cached and again.raw == GOOD and len(server.requests) == 2


def test_cached_answer_found_whatever_form_is_tried_first(tmp_path: Path) -> None:
    with ScriptedServer([GOOD], supports_json_schema=False) as server:
        settings = settings_for(server, cache_path=str(tmp_path / "c.db"))
        ask(LLMClient(settings))
        assert ask(LLMClient(settings)).cached  # a new client has learned nothing
    assert len(server.requests) == 2  # the rejected json_schema and the json_object


def test_corrupt_cache_file_does_not_break_calls(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a sqlite database, not at all" * 100)
    with ScriptedServer([GOOD, GOOD]) as server:
        with caplog.at_level(logging.WARNING):
            client = LLMClient(settings_for(server, cache_path=str(path)))
            assert ask(client).value.half == "first"
            assert not ask(client).cached
    assert len(server.requests) == 2
    assert client.cache is not None and client.cache.disabled
    assert "unusable" in caplog.text


# -------------------------------------------------------------- concurrency


def test_concurrency_limits_requests_in_flight() -> None:
    settings_kw = {"concurrency": 2, "cache": False}
    with ScriptedServer(lambda request: Reply(GOOD, delay=0.3)) as server:
        settings = settings_for(server, **settings_kw)
        clients = [get_client(settings), get_client(settings), LLMClient(settings)]
        assert clients[0] is clients[1]
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                ask(clients[i % 3], [{"role": "user", "content": f"question {i}"}])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(server.requests) == 6
    assert server.max_in_flight == 2


def test_get_client_follows_current_settings() -> None:
    with ScriptedServer([GOOD]) as server:
        with use_settings(settings_for(server)):
            client = get_client()
            assert client.model == "test-model" and get_client() is client
            assert ask(client).value.half == "first"
    with pytest.raises(NoModelConfigured):
        get_client(LLMSettings())
    with pytest.raises(NoModelConfigured):
        LLMClient(LLMSettings(base_url="http://127.0.0.1:1/v1"))


# ------------------------------------------------------------------- budget


def test_call_budget_refuses_without_sending() -> None:
    with ScriptedServer([GOOD] * 5) as server:
        client = LLMClient(settings_for(server, cache=False))
        with audit_scope() as log, budget_scope(Budget(max_calls=2)):
            ask(client)
            ask(client)
            with pytest.raises(BudgetExceeded) as err:
                ask(client)
    assert len(server.requests) == 2
    assert (err.value.kind, err.value.spent, err.value.limit) == ("calls", 2, 2)
    last = log.entries[-1]
    assert last.outcome == "budget" and (last.input_tokens, last.output_tokens) == (0, 0)
    assert log.cost.calls == 2  # the refused request is audited but was never sent


def test_retries_count_against_the_call_budget() -> None:
    with ScriptedServer([Reply(status=503), Reply(status=503), GOOD]) as server:
        client = LLMClient(settings_for(server, response_format="json_schema"))
        with budget_scope(Budget(max_calls=2)), pytest.raises(BudgetExceeded):
            ask(client)
    assert len(server.requests) == 2


def test_token_budget_uses_estimate_before_and_server_usage_after() -> None:
    with ScriptedServer([Reply(GOOD, usage=(100, 20))] * 3) as server:
        client = LLMClient(settings_for(server, cache=False))
        with budget_scope(Budget(max_tokens=150)) as scope:
            assert scope is not None
            huge = [{"role": "user", "content": "word " * 1000}]
            with pytest.raises(BudgetExceeded, match="tokens"):
                ask(client, huge)
            assert server.requests == []
            ask(client)
            assert scope.tokens == 120  # the server's count, not the estimate
            with pytest.raises(BudgetExceeded) as err:
                ask(client, [{"role": "user", "content": "x" * 160}])
            assert err.value.spent == 120 and err.value.needed == 40
            ask(client, [{"role": "user", "content": "short"}])
    assert len(server.requests) == 2


def test_nested_budgets_charge_the_outer_scope() -> None:
    with ScriptedServer([Reply(GOOD, usage=(10, 1))] * 5) as server:
        client = LLMClient(settings_for(server, cache=False))
        with budget_scope(Budget(max_calls=3)) as outer:
            with budget_scope(Budget(max_calls=1)):
                ask(client, [{"role": "user", "content": "a"}])
                with pytest.raises(BudgetExceeded):
                    ask(client, [{"role": "user", "content": "b"}])
            assert outer is not None and (outer.calls, outer.tokens) == (1, 11)
            ask(client, [{"role": "user", "content": "c"}])
            ask(client, [{"role": "user", "content": "d"}])
            with pytest.raises(BudgetExceeded):
                ask(client, [{"role": "user", "content": "e"}])
    assert len(server.requests) == 3


def test_cache_hits_cost_no_budget() -> None:
    with ScriptedServer([GOOD]) as server:
        client = LLMClient(settings_for(server))
        ask(client)
        with budget_scope(Budget(max_calls=0)):
            assert ask(client).cached
