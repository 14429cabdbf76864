"""Reruns of graphs whose state is not LangChain's messages: OpenAI-style message
dicts, and a subgraph with its own schema that the parent's messages never reach."""

from __future__ import annotations

import functools
import operator
import re
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor, branch_threads
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send
from lg_graphs import Heeding
from rerun_support import verified_branch

CUE = "A previous attempt at this task went wrong"


class DictChat(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]  # as the OpenAI SDK gives them


def dict_chat(model: Any) -> Any:
    def agent(s: DictChat) -> dict[str, Any]:
        convo = [{"role": m["role"], "content": m["content"]} for m in s["messages"]]
        return {"messages": [{"role": "assistant", "content": model.invoke(convo).content}]}

    g = StateGraph(DictChat)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    return g.compile(checkpointer=InMemorySaver())


def priced(state: dict[str, Any]) -> bool | str:
    said = state["messages"][-1]["content"]
    return "$42" in said or f"no price given: {said}"


def test_messages_kept_as_openai_dicts_get_the_directive_as_one_and_the_answer_is_read(
    dbg: AgentDebug,
) -> None:
    """A node that reads ``m["content"]`` must be handed the correction as a dict:
    a HumanMessage in the list would fail the branch on the correction itself."""
    graph = dict_chat(Heeding(cue=CUE, default="It is cheap.", heeded="It is $42."))
    cb = AgentDebugCallback(dbg, success_check=priced)
    graph.invoke(
        {"messages": [{"role": "user", "content": "Price of order 7?"}]},
        {"configurable": {"thread_id": "t-dicts"}, "callbacks": [cb]},
    )
    original = cb.trajectory()
    final = next(e for e in original.events if e.type is EventType.FINAL_ANSWER)
    assert final.output == "It is cheap."  # the last assistant dict, not the whole state
    model_call = next(e for e in original.events if e.type is EventType.LLM_RESPONSE)
    assert final.agent_name == "agent" and final.parent_id == model_call.id

    branch = verified_branch(dbg, graph, cb, priced)
    fork = branch.metadata["langgraph"]["fork"]
    config = {
        "configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}
    }
    said = graph.get_state(config).values["messages"][-1]
    assert said["role"] == "user" and said["content"].startswith(CUE)


class Research(TypedDict):
    query: str
    answer: str


class Desk(MessagesState):
    query: str
    answer: str


def research_desk(model: Any, *, own_messages: bool = False, takes_messages: bool = False) -> Any:
    """A parent with messages; its node ``research`` is a compiled subgraph whose
    schema has no messages (``own_messages``: one that has them too;
    ``takes_messages``: its input schema has them, its state does not)."""

    def lookup(s: Any) -> dict[str, Any]:
        asked = [HumanMessage(f"Find: {s['query']}"), *s.get("messages", [])]
        return {"answer": model.invoke(asked).content}

    class Both(Research):
        messages: Annotated[list[Any], operator.add]

    inner = StateGraph(
        Both if own_messages else Research, input_schema=Both if takes_messages else None
    )
    inner.add_node("lookup", lookup)
    inner.add_edge(START, "lookup")
    g = StateGraph(Desk)
    g.add_node("route", lambda s: {"query": s["messages"][-1].content})
    g.add_node("research", inner.compile())
    g.add_node("reply", lambda s: {"messages": [AIMessage(f"The price is {s['answer']}.")]})
    g.add_edge(START, "route")
    g.add_edge("route", "research")
    g.add_edge("research", "reply")
    return g.compile(checkpointer=InMemorySaver())


def desk_check(s: dict[str, Any]) -> bool | str:
    return "$42" in s["messages"][-1].content or "price not found"


def desk_request(dbg: AgentDebug, graph: Any, thread: str, directive: str) -> RerunRequest:
    """A failed run of the desk on ``thread``, and a rerun request blaming the
    lookup inside its subgraph."""
    cb = AgentDebugCallback(dbg, success_check=desk_check, diagnose=False)
    graph.invoke(
        {"messages": [HumanMessage("price of order 7")]},
        {"configurable": {"thread_id": thread}, "callbacks": [cb]},
    )
    original = cb.trajectory()
    step = next(e.step_index for e in original.events if e.agent_name == "research/lookup")
    return RerunRequest(trajectory=original, resume_step=step, directive=directive)


def test_a_directive_the_blamed_nodes_subgraph_cannot_read_is_refused(dbg: AgentDebug) -> None:
    """Blamed inside a subgraph whose input schema lacks ``messages``, the branch
    would rerun it unchanged and call a right diagnosis wrong: refused, saying why
    and what to give instead; a ``directive_update`` into a key it reads works."""
    graph = research_desk(Heeding(cue="$42", default="unknown", heeded="$42"))
    request = desk_request(dbg, graph, "t-desk", "It is $42.")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=desk_check)
    with pytest.raises(AgentDebugError) as raised:
        executor.rerun(request)
    message = str(raised.value)
    assert "node 'research/lookup', in subgraph 'research'" in message
    assert "input schema (query, answer) has no 'messages'" in message
    assert "directive_update" in message
    assert branch_threads(graph) == []  # refused before any fork was made
    # an input schema that takes messages, into a state that does not keep them
    taking = research_desk(Heeding(cue="$42", default="unknown", heeded="$42"), takes_messages=True)
    with pytest.raises(AgentDebugError, match=r"state schema \(query, answer\) has no 'messages'"):
        LangGraphRerunExecutor(taking, debugger=dbg, success_check=desk_check).rerun(
            desk_request(dbg, taking, "t-desk-3", "It is $42.")
        )

    into_query = LangGraphRerunExecutor(
        graph,
        debugger=dbg,
        success_check=desk_check,
        directive_update=lambda req, snap: {"query": f"{snap.values['query']} ({req.directive})"},
    )
    assert into_query.rerun(request).outcome.status is OutcomeStatus.SUCCESS


def test_a_subgraph_whose_schema_has_messages_gets_the_directive(dbg: AgentDebug) -> None:
    graph = research_desk(Heeding(cue=CUE, default="unknown", heeded="$42"), own_messages=True)
    request = desk_request(dbg, graph, "t-desk-2", "Find the price.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg, success_check=desk_check).rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS


def test_a_branch_the_directive_fixed_downstream_does_not_verify_the_blamed_step(
    dbg: AgentDebug,
) -> None:
    """The planner (blamed: the first decision, no detector finding anything) plans
    as before in the branch; the writer, which reads the same message list, sees
    the correction and answers right. The branch passes, but it did not test the
    planner: the blame is not confirmed."""
    from agentdebug.rerun import closed_loop

    planner = Heeding(cue="never", default="Plan: look it up.", heeded="never")
    writer = Heeding(cue=CUE, default="It is cheap.", heeded="It is $42.")

    def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [planner.invoke(state["messages"])]}

    def write(state: MessagesState) -> dict[str, Any]:
        return {"messages": [writer.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("planner", plan)
    g.add_node("writer", write)
    g.add_edge(START, "planner")
    g.add_edge("planner", "writer")
    graph = g.compile(checkpointer=InMemorySaver())

    def answered(state: dict[str, Any]) -> bool | str:
        said = str(state["messages"][-1].content)
        return "$42" in said or f"no price given: {said}"

    cb = AgentDebugCallback(dbg, success_check=answered)
    graph.invoke(
        {"messages": [HumanMessage("Price of order 7?")]},
        {"configurable": {"thread_id": "t-downstream"}, "callbacks": [cb]},
    )
    original = cb.trajectory()
    report = cb.reports[0]
    assert report.root_cause is not None and report.root_cause.agent_name == "planner"
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=answered)
    result = closed_loop(original, debugger=dbg, executor=executor, report=report, max_rounds=1)
    assert result.status == "succeeded" and result.verified_by_rerun is False
    store = dbg.store
    assert store is not None
    stored = store.load_reports(original.id)[-1]
    assert stored.verification is not None and stored.verification.status == "not_confirmed"
    assert "planner at step 1 decided as before" in stored.verification.detail


@pytest.mark.parametrize("items", [[1, 2, 3], [2, 1, 3]])
def test_a_send_branch_corrected_is_verified_whichever_packet_it_was(
    dbg: AgentDebug, items: list[int]
) -> None:
    """Three ``Send`` branches of one super-step, the one for item 2 raising: the fork
    reruns the whole super-step from the checkpoint before it, so a sibling that ran
    before the blamed one runs again as it did. Its unchanged result is no sign that
    the directive missed the blamed branch (before, with the bad item second, a fix
    that worked was reported "work at step 2 decided as before", not confirmed)."""
    from agentdebug.rerun import closed_loop
    from lg_fan import Fanned, fan, fixed, work

    g = StateGraph(Fanned)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan, ["work"])
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError, match="item 2 is bad"):
        graph.invoke(
            {"items": items, "results": []},
            {"configurable": {"thread_id": f"t-fan-{items[0]}"}, "callbacks": [cb]},
        )
    report = cb.reports[0]
    root = report.root_cause
    assert root is not None and root.agent_name == "work"
    # the branch that raised (the branches' steps go in the order their threads
    # started them: on Python 3.13 not always the order of the packets)
    raised = next(e for e in cb.trajectory().events if e.type is EventType.ERROR)
    assert root.step_index == raised.step_index

    executor = LangGraphRerunExecutor(graph, debugger=dbg, directive_update=fixed)
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=report, max_rounds=1
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
    store = dbg.store
    assert store is not None
    stored = store.load_reports(cb.trajectory().id)[-1]
    assert stored.verification is not None and stored.verification.status == "verified_by_rerun"


class Kept(TypedDict):
    history: Annotated[list[Any], add_messages]
    amount: int


def history_graph(checkpointer: Any) -> Any:
    """A conversation kept under ``history`` (an ``add_messages`` key, not
    ``messages``): ``prepare`` takes the policy's amount once told to."""

    def prepare(state: Kept) -> dict[str, Any]:
        told = any("policy" in str(m.content) for m in state["history"][1:])
        return {"amount": 24 if told else 42}

    def answer(state: Kept) -> dict[str, Any]:
        return {"history": [AIMessage(f"Your refund is ${state['amount']}.")]}

    g = StateGraph(Kept)
    g.add_node("prepare", prepare)
    g.add_node("answer", answer)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "answer")
    return g.compile(checkpointer=checkpointer)


def refund_24(state: dict[str, Any]) -> bool | str:
    return "$24" in state["history"][-1].content or "the refund amount is wrong"


def test_a_conversation_under_another_key_gives_the_goal_answer_and_directive(
    dbg: AgentDebug,
) -> None:
    """The goal is its first human message, the final answer its last assistant
    one (by the node that wrote it), and a rerun's directive goes there too
    (before: the input dict as the goal, the whole state as the answer, and a rerun
    refused for want of a ``messages`` key)."""
    graph = history_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=refund_24, diagnose=False)
    graph.invoke(
        {"history": [HumanMessage("How much is my refund?")], "amount": 0},
        {"configurable": {"thread_id": "kept"}, "callbacks": [cb]},
    )
    run = cb.trajectory()
    assert run.goal == "How much is my refund?"
    (final,) = [e for e in run.events if e.type is EventType.FINAL_ANSWER]
    assert final.agent_name == "answer" and run.outcome.final_answer == "Your refund is $42."
    step = next(e.step_index for e in run.events if e.agent_name == "prepare")
    request = RerunRequest(trajectory=run, resume_step=step, directive="Use the refund policy.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert branch.outcome.final_answer == "Your refund is $24."


class _Topics(TypedDict):
    topics: list[str]
    notes: Annotated[list[str], operator.add]


class _Packet(TypedDict):
    topic: str


def test_the_state_keys_a_refusal_names_are_the_state_s_not_a_node_input_s(
    dbg: AgentDebug,
) -> None:
    """A Send worker with an input schema of its own (``topic``) adds a channel of
    that name; the refusal to carry a directive lists the state's keys alone."""

    def worker(packet: _Packet) -> dict[str, Any]:
        return {"notes": [f"read about {packet['topic']}"]}

    g = StateGraph(_Topics)
    g.add_node("plan", lambda s: {"notes": ["planned"]})
    g.add_node("worker", worker)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda s: [Send("worker", {"topic": t}) for t in s["topics"]])
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=lambda s: "never" in s["notes"] or "no verdict")
    graph.invoke(
        {"topics": ["tides"], "notes": []}, {"callbacks": [cb], "configurable": {"thread_id": "k"}}
    )
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=1, directive="read more")
    with pytest.raises(AgentDebugError, match=r"no 'messages' key .*\(its keys: notes, topics\)"):
        LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)


def test_a_directive_update_that_cannot_serve_is_named(dbg: AgentDebug) -> None:
    """Refused when the executor is made (a class, a coroutine function, one that
    does not take (request, snapshot)); at the fork, what it gave or raised is named
    (before, a list or a key the state lacks failed as "no state update leaves its
    super-step's tasks pending", and its own error came out as a traceback)."""
    from lg_fan import Fanned, fan, work

    g = StateGraph(Fanned)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan, ["work"])
    graph = g.compile(checkpointer=InMemorySaver())
    for given, said in [
        (lambda request: {}, "does not take (request, snapshot)"),
        (dict, "is not a function of (request, snapshot)"),
    ]:
        with pytest.raises(AgentDebugError, match=re.escape(said)):
            LangGraphRerunExecutor(graph, debugger=dbg, directive_update=given)
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(ValueError):
        graph.invoke(
            {"items": [1, 2], "results": []},
            {"configurable": {"thread_id": "t-upd"}, "callbacks": [cb]},
        )
    run = cb.trajectory()
    step = next(e.step_index for e in run.events if e.type is EventType.ERROR)
    request = RerunRequest(trajectory=run, resume_step=step, directive="Fix.")

    def broken(request: RerunRequest, snapshot: Any) -> dict[str, Any]:
        raise KeyError("items")

    async def later(request: RerunRequest, snapshot: Any) -> dict[str, Any]:
        return {}

    for update, said in [
        (lambda r, s: [("items", [1])], "returned list, not a dict of the state's keys"),
        (lambda r, s: later(r, s), "returned a coroutine: the fork needs its update at once"),
        (functools.partial(lambda x, r, s: None, 1), "directive_update (partial) returned"),
        (lambda r, s: {"nope": 1}, "the graph's state has no 'nope' (its keys: items, results)"),
        (broken, "directive_update " + broken.__qualname__ + " raised KeyError: 'items'"),
    ]:
        executor = LangGraphRerunExecutor(graph, debugger=dbg, directive_update=update)
        with pytest.raises(AgentDebugError, match=re.escape(said)):
            executor.rerun(request)


class Ledger(TypedDict, total=False):
    amount: int
    messages: list[Any]  # declared, with no reducer, and not given in the input
    out: str


def test_a_declared_messages_key_absent_at_the_checkpoint_takes_the_directive(
    dbg: AgentDebug,
) -> None:
    """A state that declares ``messages`` without filling it: the checkpoint before
    the blamed node holds no messages. The directive starts the list (before, the
    rerun was refused as if the state had no 'messages' key, while naming it among
    the state's keys)."""

    def answer(s: Ledger) -> dict[str, Any]:
        told = any(CUE in str(getattr(m, "content", m)) for m in s.get("messages") or [])
        return {"out": f"refund {s['amount'] if told else 0}"}

    g = StateGraph(Ledger)
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    graph = g.compile(checkpointer=InMemorySaver())

    def refunded(state: dict[str, Any]) -> bool | str:
        return state.get("out") == "refund 42" or f"refunded {state.get('out')}"

    cb = AgentDebugCallback(dbg, success_check=refunded)
    graph.invoke({"amount": 42}, {"configurable": {"thread_id": "t-ledger"}, "callbacks": [cb]})
    assert cb.reports and cb.trajectory().outcome.status is OutcomeStatus.FAILURE
    branch = verified_branch(dbg, graph, cb, refunded)
    fork = branch.metadata["langgraph"]["fork"]
    config = {
        "configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}
    }
    (said,) = graph.get_state(config).values["messages"]
    assert isinstance(said, HumanMessage) and said.content.startswith(CUE)


def test_a_state_of_one_value_keeps_its_request_beside_the_directive(dbg: AgentDebug) -> None:
    """``StateGraph(dict)``: an update replaces the whole value, so the directive
    is added to the messages with the rest of the state kept (before: the value
    became the directive alone, the user's request lost, and the branch failed);
    the preflight lets the plan through."""

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        told = len(humans) > 1 and "A123" in str(humans[0].content)
        reply = AIMessage("Order A123 costs $42." if told else "Sorry.")
        return {**state, "messages": [*state["messages"], reply], "ok": told}

    g = StateGraph(dict)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=InMemorySaver())

    def answered(state: dict[str, Any]) -> bool | str:
        return bool(state.get("ok")) or "not answered"

    cb = AgentDebugCallback(dbg, success_check=answered)
    config: Any = {"configurable": {"thread_id": "t-dict"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("Price of order A123?")], "ok": False}, config)
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=answered)
    executor.preflight(cb.trajectory(), resume_step=1, state_patch={})
    # one that holds no messages is refused before the gate, as the rerun would be
    bare = AgentDebugCallback(dbg, success_check=answered, diagnose=False)
    with pytest.raises(KeyError):  # (its node reads the messages it lacks)
        graph.invoke({"ok": False}, {"configurable": {"thread_id": "t-bare"}, "callbacks": [bare]})
    with pytest.raises(AgentDebugError, match=r"no 'messages' key .*\(its keys: ok\)"):
        executor.preflight(bare.trajectory(), resume_step=1, state_patch={})
    branch = verified_branch(dbg, graph, cb, answered)
    fork = branch.metadata["langgraph"]["fork"]
    config = {
        "configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}
    }
    request, said = graph.get_state(config).values["messages"]
    assert request.content == "Price of order A123?" and said.content.startswith(CUE)
