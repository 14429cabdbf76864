"""Real LangGraph graphs for the tests, driven by LangChain's fake chat models."""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt

# -- a linear graph without a model ------------------------------------------------------


class Counter(TypedDict):
    n: int
    trail: Annotated[list[str], operator.add]


def linear_graph(checkpointer: Any = None, coroutines: bool = False) -> Any:
    """plan -> act -> report, each counting and leaving its name on the trail
    (with ``coroutines``, as ``async`` nodes that await, as a model call would)."""

    def step(name: str) -> Any:
        def run(state: Counter) -> dict[str, Any]:
            return {"n": state["n"] + 1, "trail": [name]}

        async def arun(state: Counter) -> dict[str, Any]:
            await asyncio.sleep(0)
            return run(state)

        return arun if coroutines else run

    g = StateGraph(Counter)
    for name in ("plan", "act", "report"):
        g.add_node(name, step(name))
    g.add_edge(START, "plan")
    g.add_edge("plan", "act")
    g.add_edge("act", "report")
    g.add_edge("report", END)
    return g.compile(checkpointer=checkpointer)


def coroutine_graph() -> Any:
    """A recorded factory: :func:`linear_graph` of ``async`` nodes, with an empty
    in-memory checkpointer (what a rerun's checks before the gate need)."""
    return linear_graph(InMemorySaver(), coroutines=True)


# -- the tool-using agent ------------------------------------------------------------------


def chain(state: type, *nodes: Callable[[Any], Any]) -> Any:
    """A compiled graph running ``nodes`` one after another, each named by its function."""
    g = StateGraph(state)
    names = [node.__name__ for node in nodes]
    for name, node in zip(names, nodes, strict=True):
        g.add_node(name, node)
    for a, b in zip([START, *names], [*names, END], strict=True):
        g.add_edge(a, b)
    return g.compile()


@tool
def lookup_order_by_email(email: str) -> str:
    """Find a customer's order by e-mail address."""
    raise ValueError(f"'{email}' is not an e-mail address")


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up by id."""
    return f"order {order_id}: $42.00"


def call(name: str, args: dict[str, Any], call_id: str, **usage: int) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": call_id}],
        usage_metadata=usage or None,  # type: ignore[arg-type]
    )


def wrong_then_right() -> list[BaseMessage]:
    """The original run picks the wrong tool and then claims success; a rerun
    from the first agent step picks the right one and answers."""
    return [
        call(
            "lookup_order_by_email",
            {"email": "A123"},
            "c1",
            input_tokens=12,
            output_tokens=5,
            total_tokens=17,
        ),
        AIMessage(content="Your refund for order A123 has been processed successfully."),
        call("lookup_order", {"order_id": "A123"}, "c2"),
        AIMessage(content="Order A123 costs $42.00."),
    ]


def scripted(messages: Iterable[BaseMessage]) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(list(messages)))


def order_found(state: dict[str, Any]) -> bool | str:
    for message in state["messages"]:
        if isinstance(message, ToolMessage) and message.name == "lookup_order":
            return True
    return "the order was never looked up"


def tool_agent(
    model: Any,
    checkpointer: Any = None,
    *,
    stream: bool = False,
    handle_tool_errors: bool = True,
    **compile_kw: Any,
) -> Any:
    """A model node and a tool node in a loop; with ``stream`` the model node
    streams the answer and joins the chunks (``interrupt_before=["tools"]``: a
    human approves the tool calls; without ``handle_tool_errors`` a tool's error
    crashes the run)."""

    def agent(state: MessagesState) -> dict[str, Any]:
        if not stream:
            return {"messages": [model.invoke(state["messages"])]}
        reply = None
        for chunk in model.stream(state["messages"]):
            reply = chunk if reply is None else reply + chunk
        return {"messages": [reply]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    tools = ToolNode([lookup_order_by_email, lookup_order], handle_tool_errors=handle_tool_errors)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer, **compile_kw)


# -- a graph that needs what it was invoked with ---------------------------------------------


@dataclass
class Tenant:
    """A runtime context: ``graph.invoke(..., context=Tenant("acme"))``."""

    name: str
    currency: str = "USD"
    client: Any = None  # (a connection, say: an object without a JSON form)


# what each run of context_agent's model node was given: (context, user_id, api_key,
# recursion limit)
SEEN: list[tuple[Any, Any, Any, Any]] = []


def context_agent(model: Any, checkpointer: Any = None, *, schema: bool = True) -> Any:
    """The tool agent, whose model node needs the run's ``Tenant`` context and the
    ``user_id`` of its configurable (and notes them in ``SEEN``)."""

    def agent(state: MessagesState, runtime: Runtime[Tenant], config: RunnableConfig) -> Any:
        conf = config.get("configurable", {})
        SEEN.append(
            (
                runtime.context,
                conf.get("user_id"),
                conf.get("api_key"),
                config.get("recursion_limit"),
            )
        )
        if not isinstance(runtime.context, Tenant):
            raise LookupError(f"no tenant in the runtime context: {runtime.context!r}")
        if conf.get("user_id") is None:
            raise LookupError("no user_id in the run's configurable")
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState, context_schema=Tenant if schema else None)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([lookup_order_by_email, lookup_order], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def context_agent_from_env() -> Any:
    """context_agent on the SQLite file of ``LG_TEST_DB``, with a context schema
    unless ``LG_NO_SCHEMA`` is set."""
    saver = sqlite_saver(os.environ["LG_TEST_DB"])
    return context_agent(FACTORY_MODEL[-1], saver, schema=not os.environ.get("LG_NO_SCHEMA"))


class StreamingFake(BaseChatModel):
    """A scripted chat model that streams each answer as one chunk, tool calls
    as tool-call chunks, as a provider's streaming API delivers them."""

    script: list[AIMessage]

    @property
    def _llm_type(self) -> str:
        return "streaming-fake"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self.script.pop(0))])

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        msg = self.script.pop(0)
        chunks = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(msg.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(content=msg.content, tool_call_chunks=chunks)  # type: ignore[arg-type]
        )


# The graph factory a stored run records: rebuilt from the SQLite file named in
# the environment, with the model the test put here.
FACTORY_MODEL: list[Any] = []


def sqlite_saver(path: str) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def agent_from_env() -> Any:
    return tool_agent(FACTORY_MODEL[-1], sqlite_saver(os.environ["LG_TEST_DB"]))


def broken_factory() -> Any:
    raise RuntimeError("unable to open database file")


def exiting_factory() -> Any:
    raise SystemExit("orders.db is missing: run setup.py first")  # (an app's own exit)


def not_a_graph() -> Any:
    return 42


def unsaved_agent() -> Any:
    """The agent compiled without a checkpointer: nothing of the run to fork."""
    return tool_agent(scripted([AIMessage("Done.")]))


# -- subgraph, Send fan-out, interrupt, failure --------------------------------------------


class Work(TypedDict):
    items: list[str]
    out: Annotated[list[str], operator.add]


def subgraph_graph(checkpointer: Any = None) -> Any:
    inner = StateGraph(Work)
    inner.add_node("inner", lambda s: {"out": ["inner"]})
    inner.add_edge(START, "inner")
    g = StateGraph(Work)
    g.add_node("sub", inner.compile())
    g.add_node("after", lambda s: {"out": ["after"]})
    g.add_edge(START, "sub")
    g.add_edge("sub", "after")
    return g.compile(checkpointer=checkpointer)


def fan_out_graph(checkpointer: Any = None) -> Any:
    def route(state: Work) -> list[Send]:
        return [Send("work", {"items": [item], "out": []}) for item in state["items"]]

    g = StateGraph(Work)
    g.add_node("plan", lambda s: {"out": ["planned"]})
    g.add_node("work", lambda s: {"out": [f"did {s['items'][0]}"]})
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", route, ["work"])
    g.add_edge("work", END)
    return g.compile(checkpointer=checkpointer)


def approval_graph(checkpointer: Any) -> Any:
    def ask(state: Work) -> dict[str, Any]:
        answer = interrupt({"question": "refund $42?"})
        return {"out": [f"approved: {answer}"]}

    g = StateGraph(Work)
    g.add_node("prepare", lambda s: {"out": ["prepared"]})
    g.add_node("ask", ask)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=checkpointer)


class Approved(MessagesState):
    amount: int
    out: Annotated[list[str], operator.add]


def approved_refund(checkpointer: Any) -> Any:
    """``prepare`` works out the amount: 42, wrongly, unless a message (the rerun's
    directive) is in the state; ``ask`` has a human approve it, quoting it."""

    def prepare(state: Approved) -> dict[str, Any]:
        return {"amount": 24 if state["messages"] else 42, "out": ["prepared"]}

    def ask(state: Approved) -> dict[str, Any]:
        answer = interrupt({"question": f"refund ${state['amount']}?"})
        return {"out": [f"refund {state['amount']}: {answer}"]}

    g = StateGraph(Approved)
    g.add_node("prepare", prepare)
    g.add_node("ask", ask)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=checkpointer)


def approved_refund_from_env() -> Any:
    return approved_refund(sqlite_saver(os.environ["LG_TEST_DB"]))


def refunded_24(state: dict[str, Any]) -> bool | str:
    return "refund 24: yes" in state["out"] or f"wrong refund: {state['out'][-1]}"


class PaymentDeclined(RuntimeError):
    pass


def failing_graph(error: BaseException, checkpointer: Any = None) -> Any:
    def charge(state: Work) -> dict[str, Any]:
        raise error

    g = StateGraph(Work)
    g.add_node("prepare", lambda s: {"out": ["prepared"]})
    g.add_node("charge", charge)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    return g.compile(checkpointer=checkpointer)


class Quote(TypedDict):
    price: float
    out: Annotated[list[str], operator.add]


def retried_graph(failures: int, *, attempts: int = 3, raising: BaseException | None = None) -> Any:
    """``fetch`` times out ``failures`` times under a RetryPolicy of ``attempts``
    (raising ``raising`` each time, if given: one exception object), then ``quote``
    misquotes the price it fetched (ten times too much)."""
    from langgraph.types import RetryPolicy

    calls = [0]

    def fetch(state: Quote) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] <= failures:
            raise raising or TimeoutError(f"price service timed out (call {calls[0]})")
        return {"price": 42.0, "out": ["fetched"]}

    def quote(state: Quote) -> dict[str, Any]:
        return {"out": [f"The price is ${state['price'] * 10:.2f}."]}

    policy = RetryPolicy(max_attempts=attempts, initial_interval=0.001, retry_on=TimeoutError)
    g = StateGraph(Quote)
    g.add_node("fetch", fetch, retry_policy=policy)
    g.add_node("quote", quote)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "quote")
    return g.compile()


def retried_subgraph(failures: int) -> Any:
    """A subgraph node under a RetryPolicy whose inner node times out ``failures``
    times; the node after it gets the answer wrong."""
    from langgraph.types import RetryPolicy

    calls = [0]

    def lookup(state: Work) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] <= failures:
            raise TimeoutError("inventory service timed out")
        return {"out": ["in stock"]}

    inner = StateGraph(Work)
    inner.add_node("lookup", lookup)
    inner.add_edge(START, "lookup")
    policy = RetryPolicy(max_attempts=3, initial_interval=0.001, retry_on=TimeoutError)
    g = StateGraph(Work)
    g.add_node("stock", inner.compile(), retry_policy=policy)
    g.add_node("reply", lambda s: {"out": ["out of stock"]})
    g.add_edge(START, "stock")
    g.add_edge("stock", "reply")
    return g.compile()


def quoted_42(state: dict[str, Any]) -> bool | str:
    return "$42.00" in state["out"][-1] or "the quote is not $42.00"


def looping_graph() -> Any:
    g = StateGraph(Counter)
    g.add_node("spin", lambda s: {"n": s["n"] + 1, "trail": ["spin"]})
    g.add_edge(START, "spin")
    g.add_edge("spin", "spin")
    return g.compile()


def two_senders_graph(checkpointer: Any = None) -> Any:
    """``a`` and ``b`` run in parallel and each sends one ``work`` branch; ``a`` is
    slow, so the nodes finish in the opposite order to the one LangGraph numbers
    their packets in."""

    def a(state: Work) -> dict[str, Any]:
        time.sleep(0.05)
        return {"out": ["a"]}

    g = StateGraph(Work)
    g.add_node("a", a)
    g.add_node("b", lambda s: {"out": ["b"]})
    g.add_node("work", lambda s: {"out": [f"work:{s['items'][0]}"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_conditional_edges(
        "a", lambda s: [Send("work", {"items": ["from_a"], "out": []})], ["work"]
    )
    g.add_conditional_edges(
        "b", lambda s: [Send("work", {"items": ["from_b"], "out": []})], ["work"]
    )
    g.add_edge("work", END)
    return g.compile(checkpointer=checkpointer)


class Reviewed(MessagesState):
    verdict: str


def reviewed_answer(model: Any, reviewer: Any) -> Any:
    """An answer node, then a review node whose model call judges the answer
    (its verdict goes to another key, not into the messages)."""

    def answer(state: Reviewed) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: Reviewed) -> dict[str, Any]:
        last = state["messages"][-1].content
        return {"verdict": reviewer.invoke([HumanMessage(f"Is this right? {last}")]).content}

    g = StateGraph(Reviewed)
    g.add_node("answer", answer)
    g.add_node("review", review)
    g.add_edge(START, "answer")
    g.add_edge("answer", "review")
    return g.compile()


class Heeding(BaseChatModel):
    """A model that answers ``heeded`` once a message in its prompt contains
    ``cue`` (a directive that names the failure), else ``default``."""

    cue: str
    default: str
    heeded: str

    @property
    def _llm_type(self) -> str:
        return "heeding-fake"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        seen = any(self.cue in str(m.content) for m in messages)
        reply = AIMessage(content=self.heeded if seen else self.default)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def planned_answer(planner: Any, checkpointer: Any = None, coroutines: bool = False) -> Any:
    """A planner node, then a writer that follows the plan: no tool, no error, so
    a wrong plan leaves nothing for a detector to find (with ``coroutines``, both
    are ``async`` nodes only: LangGraph cannot run them with ``invoke``)."""

    def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [planner.invoke(state["messages"])]}

    def write(state: MessagesState) -> dict[str, Any]:
        plan_text = str(state["messages"][-1].content)
        said = "Your refund is $42." if "refund" in plan_text else "It ships on Monday."
        return {"messages": [AIMessage(content=said)]}

    async def aplan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await planner.ainvoke(state["messages"])]}

    async def awrite(state: MessagesState) -> dict[str, Any]:
        return write(state)

    g = StateGraph(MessagesState)
    g.add_node("planner", aplan if coroutines else plan)
    g.add_node("writer", awrite if coroutines else write)
    g.add_edge(START, "planner")
    g.add_edge("planner", "writer")
    return g.compile(checkpointer=checkpointer)


def refund_given(state: dict[str, Any]) -> bool | str:
    last = state["messages"][-1].content
    return True if "$42" in last else "the answer does not give the refund amount"


# -- the prebuilt agent and the functional API -------------------------------------------------


class ToolBindingFake(GenericFakeChatModel):
    """A scripted model the prebuilt agent can bind tools to (the script decides)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return {"Paris": "sunny", "Oslo": "snow"}[city]


def prebuilt_agent(
    model: Any, tools: Any = (weather,), checkpointer: Any = None, **options: Any
) -> Any:
    """LangGraph's prebuilt ReAct agent (its tool node runs each tool call as a
    ``Send``); a failing tool answers the model with its error, as in ``tool_agent``.
    ``options`` go to ``create_react_agent`` (``pre_model_hook``, ...)."""
    with warnings.catch_warnings():  # moved to langchain.agents, which is not installed here
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        node = ToolNode(list(tools), handle_tool_errors=True)
        return create_react_agent(model, node, checkpointer=checkpointer, **options)


def functional_workflow(model: Any, checkpointer: Any) -> Any:
    """The functional API: an entrypoint that runs two tasks, one of them a model call."""
    from langgraph.func import entrypoint, task

    @task
    def write(topic: str) -> str:
        return str(model.invoke([HumanMessage(content=f"Write one line about {topic}.")]).content)

    @task
    def count_words(text: str) -> int:
        return len(text.split())

    @entrypoint(checkpointer=checkpointer)
    def workflow(topic: str) -> dict[str, Any]:
        text = write(topic).result()
        return {"text": text, "words": count_words(text).result()}

    return workflow


def agent_loop(model: Any, tools: Any, checkpointer: Any = None, agent: Any = None) -> Any:
    """A model node and a tools node (``tools``: a ToolNode or a node function) in
    the usual loop (``agent``: a node function of its own instead of the model's)."""
    g = StateGraph(MessagesState)
    g.add_node("agent", agent or (lambda s: {"messages": [model.invoke(s["messages"])]}))
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)
