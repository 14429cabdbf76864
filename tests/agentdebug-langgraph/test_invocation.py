"""A rerun branch is invoked as its run was: with the run's runtime ``context``, its
``configurable`` keys and its recursion limit; the very objects in the process that
made the run, as recorded in another, and what the record cannot hold is asked
for, never guessed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import lg_graphs
import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.plugins import get_registry
from agentdebug.rerun import closed_loop, find_executor
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from agentdebug_langgraph._invocation import Invocation, record, secret_name
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import SEEN, Tenant, context_agent, order_found, scripted, wrong_then_right
from rerun_support import REQUEST, worker


@pytest.fixture(autouse=True)
def _seen() -> None:
    SEEN.clear()


def test_secret_names() -> None:
    secret = ["api_key", "OPENAI_API_KEY", "access_token", "token", "password", "client_secret"]
    secret += ["auth", "Authorization", "cookie", "bearer", "aws_access_key_id", "openai_key"]
    secret += ["db_pwd", "auth_header", "passphrase", "signing_key", "jwt", "dsn"]
    secret += ["apiKey", "x-api-key", "accessToken", "privateKey", "clientSecret", "APIKEY"]
    plain = ["max_tokens", "author", "user_id", "model", "token_limit", "thread_id", "keys"]
    # (a review: these looked like secrets, so a CLI rerun of the run was refused)
    plain += ["include_private_repos", "secretary_email", "hotkey", "monkey", "private_mode"]
    plain += ["pwd_dir", "sort_key_order", ""]
    # (a second review: names the words alone missed, which then leaked into the store)
    secret += ["api_keys", "apiKeys", "privatekey", "secretkey", "SECRETKEY", "apisecret"]
    secret += ["userpassword", "passWord", "DBPWD", "cookie_header", "jwt_value", "private"]
    secret += ["privkey", "license_key", "private_data", "sshkey"]
    assert [n for n in secret if not secret_name(n)] == []
    assert [n for n in plain if secret_name(n)] == []


def _store_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("agentdebug.db"))


def test_a_branch_runs_with_the_runs_own_context_configuration_and_recursion_limit(
    dbg: AgentDebug, _home: Path
) -> None:
    graph = context_agent(scripted(wrong_then_right()), InMemorySaver())
    tenant = Tenant("acme", client=object())  # a client has no JSON form: not recorded
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config = {
        "configurable": {
            "thread_id": "t-ctx",
            "user_id": "u1",
            "api_key": "sk-live-123",
            "llm": {"model": "gpt-x", "auth": {"bearer": "sk-nested-789"}},
        },
        "recursion_limit": 40,
        "callbacks": [cb],
    }
    graph.invoke(REQUEST, config, context=tenant)
    assert cb.reports, "the run must fail and be diagnosed"
    original = cb.trajectory()
    invoked = original.metadata["langgraph"]["invoked_with"]
    assert invoked["configurable"] == {"user_id": "u1"}
    assert invoked["unrecorded"] == ["api_key", "llm"]  # a secret's name, at any depth
    assert invoked["context_type"] == "lg_graphs:Tenant"
    assert "field client has no JSON form" in invoked["context_unrecorded"]
    assert invoked["recursion_limit"] == 40
    dbg.close()
    stored = _store_bytes(_home)
    assert b"sk-live-123" not in stored and b"sk-nested-789" not in stored

    debugger = AgentDebug(_home)
    executor = LangGraphRerunExecutor(graph, debugger=debugger)
    result = closed_loop(original, debugger=debugger, executor=executor, report=cb.reports[0])
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
    # in this process the branch got the very objects the run was given
    branch_calls = SEEN[2:]
    assert branch_calls and all(seen[0] is tenant for seen in branch_calls)
    assert {seen[1:] for seen in branch_calls} == {("u1", "sk-live-123", 40)}
    debugger.close()


RECORDED = """
import os, sys
sys.path.insert(0, sys.argv[2])
os.environ["LG_TEST_DB"] = sys.argv[3]
if sys.argv[4] == "no-schema":
    os.environ["LG_NO_SCHEMA"] = "1"
import lg_graphs
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import HumanMessage
lg_graphs.FACTORY_MODEL.append(lg_graphs.scripted(lg_graphs.wrong_then_right()))
graph = lg_graphs.context_agent_from_env()
cb = AgentDebugCallback(
    AgentDebug(sys.argv[1]),
    success_check=lg_graphs.order_found,
    graph_factory="lg_graphs:context_agent_from_env",
)
configurable = {"thread_id": "w1", "user_id": "u7"}
tenant = lg_graphs.Tenant("acme", currency="EUR")
if sys.argv[5] == "secret":
    configurable["api_key"] = "sk-worker-456"
    tenant = lg_graphs.Tenant("acme", currency="EUR", client=object())
config = {"configurable": configurable, "recursion_limit": 30, "callbacks": [cb]}
graph.invoke({"messages": [HumanMessage(content="Refund order A123")]}, config, context=tenant)
assert cb.reports
print("exiting", flush=True)
"""


def _recorded_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, schema: bool, secret: bool
) -> tuple[AgentDebug, Any, Any]:
    """The failing run, made in a worker process; here, the debugger on its store,
    the run and its report, and the graph factory set to answer right."""
    home, db = tmp_path / "home", str(tmp_path / "cp.db")
    worker(RECORDED, home, db, "schema" if schema else "no-schema", "secret" if secret else "-")
    monkeypatch.setenv("LG_TEST_DB", db)
    if not schema:
        monkeypatch.setenv("LG_NO_SCHEMA", "1")
    monkeypatch.setattr(lg_graphs, "FACTORY_MODEL", [scripted(wrong_then_right()[2:])])
    dbg = AgentDebug(home)
    store = dbg.store
    assert store is not None
    (summary,) = store.list_runs()
    run = store.load_trajectory(summary.id)
    (report,) = store.load_reports(run.id)
    return dbg, run, report


@pytest.mark.parametrize("schema", [True, False], ids=["context_schema", "no-schema"])
def test_a_rerun_in_another_process_invokes_the_branch_as_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: bool
) -> None:
    """With the graph's ``context_schema``, LangGraph makes the recorded fields a
    ``Tenant``; without one, the rerun imports the recorded class itself."""
    dbg, run, report = _recorded_elsewhere(tmp_path, monkeypatch, schema=schema, secret=False)
    executor = find_executor("langgraph", get_registry())
    result = closed_loop(run, debugger=dbg, executor=executor, report=report)
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
    assert SEEN, "the branch ran the model node"
    for context, user, api_key, limit in SEEN:
        assert context == Tenant("acme", currency="EUR") and isinstance(context, Tenant)
        assert (user, api_key, limit) == ("u7", None, 30)
    dbg.close()


def test_what_the_record_lacks_is_asked_for_and_taken_from_the_executor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbg, run, report = _recorded_elsewhere(tmp_path, monkeypatch, schema=True, secret=True)
    assert b"sk-worker-456" not in _store_bytes(tmp_path / "home")
    executor = find_executor("langgraph", get_registry())
    result = closed_loop(run, debugger=dbg, executor=executor, report=report)
    assert result.status == "error" and not SEEN  # refused before any branch ran
    detail = result.detail
    assert f"cannot rerun run '{run.id}' here" in detail
    assert "configurable key api_key" in detail and "config={'configurable'" in detail
    assert "lg_graphs:Tenant (field client has no JSON form, or too long a one)" in detail
    assert "LangGraphRerunExecutor(context=...)" in detail
    store = dbg.store
    assert store is not None and len(store.list_runs()) == 1  # and no branch was made

    client = object()
    given = LangGraphRerunExecutor(
        debugger=dbg,
        config={"configurable": {"api_key": "sk-given"}},
        context=Tenant("acme", currency="EUR", client=client),
    )
    result = closed_loop(run, debugger=dbg, executor=given, report=report)
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
    assert {(s[0].client is client, s[1], s[2], s[3]) for s in SEEN} == {
        (True, "u7", "sk-given", 30)
    }
    branch = store.load_trajectory(result.final_run_id or "")
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    dbg.close()


def test_an_async_run_and_its_async_branch_get_the_same_context(dbg: AgentDebug) -> None:
    graph = context_agent(scripted(wrong_then_right()), InMemorySaver())
    tenant = Tenant("acme")
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config = {"configurable": {"thread_id": "t-actx", "user_id": "u2"}, "callbacks": [cb]}
    asyncio.run(graph.ainvoke(REQUEST, config, context=tenant))
    original = cb.trajectory()
    assert original.metadata["langgraph"]["invoked_with"] == {
        "configurable": {"user_id": "u2"},
        "context_type": "lg_graphs:Tenant",
        "context": {"name": "acme", "currency": "USD", "client": None},
    }
    executor = LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True)
    result = closed_loop(original, debugger=dbg, executor=executor, report=cb.reports[0])
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
    assert len(SEEN) > 2 and all(s[0] is tenant and s[1] == "u2" for s in SEEN)


def test_a_context_json_cannot_hold_never_costs_the_run(dbg: AgentDebug) -> None:
    """Keys that are not text, integers orjson cannot write: the run is recorded,
    its context named as not recorded."""
    for context in ({1: "one"}, {"n": 2**70}):
        graph = context_agent(scripted(wrong_then_right()), InMemorySaver(), schema=False)
        cb = AgentDebugCallback(dbg, success_check=order_found, diagnose=False)
        config = {
            "configurable": {"thread_id": f"t-{len(SEEN)}", "user_id": "u"},
            "callbacks": [cb],
        }
        with pytest.raises(LookupError):  # (the node wants a Tenant)
            graph.invoke(REQUEST, config, context=context)
        invoked = cb.trajectory().metadata["langgraph"]["invoked_with"]
        assert invoked["configurable"] == {"user_id": "u"} and "context_unrecorded" in invoked


def test_a_context_its_record_would_not_make_again_is_named_not_stored() -> None:
    """A pydantic ``SecretStr`` is dumped as stars, an excluded field not at all: a
    rerun given that record would run with another context than the run had."""
    from pydantic import BaseModel, Field, SecretStr

    class Keyed(BaseModel):
        name: str
        signing: SecretStr

    class Partial(BaseModel):
        name: str
        region: str = Field(default="us", exclude=True)

    class Aliased(BaseModel):
        tenant_name: str = Field(alias="tenantName")

    for context in (Keyed(name="a", signing=SecretStr("s3cret")), Partial(name="a", region="eu")):
        got = record(Invocation({}, context)) or {}
        assert got["context_unrecorded"] == "its fields as JSON do not make the same context again"
        assert "context" not in got
    got = record(Invocation({}, Aliased(tenantName="acme"))) or {}
    assert got["context"] == {"tenantName": "acme"}  # by alias: it makes the same again


def test_a_retry_given_no_context_records_the_one_of_the_run_it_continues(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug_langgraph import _invocation
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.runtime import Runtime

    failures = [RuntimeError("the payment service is down")]

    def plan(state: MessagesState, runtime: Runtime[Tenant]) -> dict[str, Any]:
        SEEN.append((runtime.context, None, None, None))
        return {}

    def pay(state: MessagesState) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return {}

    g = StateGraph(MessagesState, context_schema=Tenant)
    g.add_node("plan", plan)
    g.add_node("pay", pay)
    g.add_edge(START, "plan")
    g.add_edge("plan", "pay")
    graph = g.compile(checkpointer=InMemorySaver())
    conf = {"thread_id": "t-retry", "user_id": "u1"}
    with pytest.raises(RuntimeError):
        graph.invoke(
            REQUEST,
            {"configurable": conf, "callbacks": [AgentDebugCallback(dbg)]},
            context=Tenant("acme", currency="EUR"),
        )
    cb = AgentDebugCallback(dbg)  # the retry: invoke(None), the context not given again
    graph.invoke(None, {"configurable": {**conf, "attempt": 2}, "callbacks": [cb]})
    retry = cb.trajectory()
    first = retry.metadata["continues"]
    invoked = retry.metadata["langgraph"]["invoked_with"]
    assert invoked["context_type"] == "lg_graphs:Tenant"
    assert invoked["context"] == {"name": "acme", "currency": "EUR", "client": None}
    assert invoked["configurable"] == {"user_id": "u1", "attempt": 2}
    assert invoked["inherited_from"] == first

    # another process has none of the live objects: the record makes the context again
    monkeypatch.setattr(_invocation, "_LIVE", type(_invocation._LIVE)())
    monkeypatch.setattr(_invocation, "_SUCCEEDED", type(_invocation._LIVE)())
    branch = _invocation.for_branch(retry, graph, configurable={}, context=None)
    assert branch.context == Tenant("acme", currency="EUR")
    assert branch.configurable == {"user_id": "u1", "attempt": 2}


def test_what_a_continuing_run_gives_again_goes_before_what_it_inherits() -> None:
    from agentdebug_langgraph._invocation import inherited

    before = {
        "configurable": {"user_id": "u1", "region": "eu"},
        "unrecorded": ["api_key"],
        "context": {"name": "acme"},
        "context_type": "lg_graphs:Tenant",
        "recursion_limit": 40,
    }
    own = {
        "configurable": {"region": "us"},
        "context_unrecorded": "field client has no JSON form",
        "context_type": "lg_graphs:Tenant",
    }
    got = inherited(own, before, "r1")
    assert got["configurable"] == {"user_id": "u1", "region": "us"}
    assert got["unrecorded"] == ["api_key"]
    assert "context" not in got and got["context_unrecorded"] == own["context_unrecorded"]
    assert got["recursion_limit"] == 40 and got["inherited_from"] == "r1"
    assert inherited(own, None, "r1") is own
    assert inherited(before, before, "r1") == before  # nothing inherited: not marked


class Client:
    """A per-request client (it would hold a socket)."""


def test_a_service_holds_the_live_context_of_few_runs_that_succeeded(dbg: AgentDebug) -> None:
    """Reruns in this process get a run's very context objects, so they are kept:
    for the latest 256 runs that failed or stopped, but for the latest 16 that
    succeeded only (a service whose runs mostly succeed, a client each, held
    hundreds of them open)."""
    import gc
    import weakref

    from agentdebug_langgraph import _invocation
    from langchain_core.messages import AIMessage, HumanMessage

    failing = Client()
    graph = context_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=order_found, diagnose=False)
    graph.invoke(
        REQUEST,
        {"configurable": {"thread_id": "f", "user_id": "u"}, "callbacks": [cb]},
        context=Tenant("acme", client=failing),
    )
    failed_id = cb.last_run_id
    assert cb.trajectory().outcome.status is OutcomeStatus.FAILURE

    clients = []
    for i in range(40):
        client = Client()
        clients.append(weakref.ref(client))
        answer = scripted([AIMessage(content=f"hello {i}")])
        app = context_agent(answer)
        ok = AgentDebugCallback(dbg, diagnose=False)
        app.invoke(
            {"messages": [HumanMessage(content="hi")]},
            {"configurable": {"user_id": "u"}, "callbacks": [ok]},
            context=Tenant("acme", client=client),
        )
        assert ok.trajectory().outcome.status is OutcomeStatus.SUCCESS
        del client
    SEEN.clear()
    gc.collect()
    alive = [ref for ref in clients if ref() is not None]
    assert len(alive) == _invocation.KEPT_SUCCEEDED == 16
    assert alive == clients[-16:]  # the latest ones
    kept = _invocation.live_invocation(failed_id)
    assert kept is not None and kept.context.client is failing  # a rerun gets it still


def test_secret_named_fields_of_a_runs_input_and_final_state_are_not_stored(
    dbg: AgentDebug, _home: Path
) -> None:
    """A state with ``api_key`` and ``db_password`` fields (nested too): the run's
    input, its goal (which ``agentdebug list`` prints) and its final state hold
    ``[redacted]``, as configurable keys of such names are never stored; the graph
    and the success check see the values (before: stored and shown as given)."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    class Job(TypedDict):
        task: str
        api_key: str
        db: dict[str, Any]

    seen: list[str] = []

    def work(state: Job) -> dict[str, Any]:
        seen.append(state["api_key"])
        return {"task": state["task"] + " done"}

    g = StateGraph(Job)
    g.add_node("work", work)
    g.add_edge(START, "work")
    checked: list[Any] = []
    cb = AgentDebugCallback(dbg, success_check=lambda state: checked.append(state["db"]) or True)
    given = {
        "task": "sync",
        "api_key": "sk-live-123456",
        "db": {"host": "h", "password": "hunter2"},
    }
    g.compile().invoke(given, {"callbacks": [cb]})
    assert seen == ["sk-live-123456"] and checked == [{"host": "h", "password": "hunter2"}]
    run = cb.trajectory()
    assert run.goal == 'task=sync, api_key="[redacted]", db={host=h, password="[redacted]"}'
    assert run.events[0].input == {
        "task": "sync",
        "api_key": "[redacted]",
        "db": {"host": "h", "password": "[redacted]"},
    }
    assert run.outcome.final_answer["api_key"] == "[redacted]"
    dbg.flush()
    stored = _store_bytes(_home)
    assert b"sk-live-123456" not in stored and b"hunter2" not in stored
