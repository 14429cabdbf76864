"""LangChain's ``create_agent`` (LangChain 1.x's agent, a LangGraph graph with
middleware): captured, diagnosed and rerun like any graph.

``create_agent`` marks its runs ``ls_integration: "langchain_create_agent"``, and
LangGraph then leaves its own mark off; a graph's start is known by the stream
starting it instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type, run_as
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import linear_graph, lookup_order, lookup_order_by_email, order_found
from pydantic import BaseModel
from rerun_support import verified_branch

CUE = "A previous attempt at this task went wrong"  # how a rerun's directive begins


class Clerk(BaseChatModel):
    """Looks the order up by e-mail (a tool that fails) unless a directive in its
    prompt says the last attempt went wrong; then by id. After a tool's answer it
    says what it found."""

    @property
    def _llm_type(self) -> str:
        return "clerk-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Clerk:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage("Order A123 costs $42.00.")
        elif any(CUE in str(m.content) for m in messages):
            reply = AIMessage("", tool_calls=[_call("lookup_order", {"order_id": "A123"}, "k2")])
        else:
            reply = AIMessage(
                "", tool_calls=[_call("lookup_order_by_email", {"email": "A123"}, "k1")]
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class Says(Clerk):
    """Answers what ``reply(messages)`` gives."""

    reply: Any

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])


class Weather(BaseModel):
    city: str
    temperature_c: float


def forecast(messages: list[BaseMessage]) -> AIMessage:
    """The model's structured answer: the schema called as a tool."""
    said = _call("Weather", {"city": "Paris", "temperature_c": 21.5}, "w1")
    return AIMessage("", tool_calls=[said])


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_create_agent_run_is_captured_diagnosed_and_rerun_verified(
    dbg: AgentDebug, how: str
) -> None:
    agent = create_agent(
        Clerk(), [lookup_order_by_email, lookup_order], checkpointer=InMemorySaver()
    )
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config = {"callbacks": [cb], "configurable": {"thread_id": f"clerk-{how}"}}
    with pytest.raises(ValueError, match="not an e-mail address"):  # (unchanged)
        run_as(how, agent, {"messages": [HumanMessage("Refund order A123")]}, config)
    run = cb.trajectory()
    assert run.goal == "Refund order A123"
    assert [e.agent_name for e in of_type(run, EventType.AGENT_START)] == ["model", "tools"]
    decision = of_type(run, EventType.LLM_RESPONSE)[0]
    (asked,) = of_type(run, EventType.TOOL_CALL)
    assert (asked.parent_id, asked.step_index, asked.agent_name) == (decision.id, 1, "model")
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert result.error is not None and "not an e-mail address" in result.error.message
    assert run.outcome.status is OutcomeStatus.FAILURE
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("model", 1)
    history = list(agent.get_state_history(config))
    branch = verified_branch(dbg, agent, cb, order_found)  # its own runs recorded too
    assert [e.agent_name for e in of_type(branch, EventType.TOOL_CALL)][-1] == "model"
    assert len(list(agent.get_state_history(config))) == len(history)  # the user's thread


def test_a_graph_run_with_an_integration_mark_of_the_users_is_captured(dbg: AgentDebug) -> None:
    """LangGraph marks its run ``ls_integration: "langgraph"`` only when the config
    names none; an app that names its own still has its runs recorded."""
    cb = AgentDebugCallback(dbg)
    out = linear_graph().invoke(
        {"n": 0, "trail": []}, {"callbacks": [cb], "metadata": {"ls_integration": "my-app"}}
    )
    assert out["n"] == 3
    run = cb.trajectory()
    assert [e.agent_name for e in of_type(run, EventType.AGENT_START)] == ["plan", "act", "report"]


def test_a_tool_error_the_retry_middleware_got_past_is_not_blamed(dbg: AgentDebug) -> None:
    """``ToolRetryMiddleware`` runs a failed call again in the same node run: the
    retry's result names the failed one (``retry_of``), so the outage it got past is
    resolved, and the run's real failure (no refund issued) is not put on it."""
    from langchain.agents.middleware import ToolRetryMiddleware
    from langchain_core.tools import tool

    tries: list[str] = []

    @tool
    def find_order(order_id: str) -> str:
        """Look an order up by id."""
        tries.append(order_id)
        if len(tries) == 1:
            raise ConnectionError("temporary outage")
        return f"order {order_id}: $42.00"

    def claims(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Your refund has been issued.")  # (it issued none)
        return AIMessage("", tool_calls=[_call("find_order", {"order_id": "A1"}, "f1")])

    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0.0, retry_on=(ConnectionError,))
    agent = create_agent(Says(reply=claims), [find_order], middleware=[retry])
    cb = AgentDebugCallback(dbg, success_check=lambda s: "no refund was issued")
    agent.invoke({"messages": [HumanMessage("Refund order A1")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    failed, answered = of_type(run, EventType.TOOL_RESULT)
    assert failed.error is not None and "temporary outage" in failed.error.message
    assert answered.error is None and answered.metadata["retry_of"] == failed.id
    assert answered.metadata["attempt"] == 2
    (report,) = cb.reports
    assert "temporary outage" not in (report.summary or "")
    assert all(
        f.mode_id != "system.tool_error" or f.severity.value == "info" for f in report.findings
    )


def test_a_structured_response_is_the_final_answer_of_the_call_that_gave_it(
    dbg: AgentDebug,
) -> None:
    """``response_format``: the app's answer is the state's ``structured_response``
    (the model called the schema as a tool); so is the run's final answer, linked
    to that model call, not the whole state under the input."""
    agent = create_agent(Says(reply=forecast), [], response_format=Weather)
    cb = AgentDebugCallback(dbg)
    out = agent.invoke({"messages": [HumanMessage("Weather in Paris?")]}, {"callbacks": [cb]})
    assert out["structured_response"] == Weather(city="Paris", temperature_c=21.5)
    run = cb.trajectory()
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    (decision,) = of_type(run, EventType.LLM_RESPONSE)
    assert final.output == {"city": "Paris", "temperature_c": 21.5}
    assert (final.agent_name, final.parent_id) == ("model", decision.id)
    assert run.outcome.final_answer == {"city": "Paris", "temperature_c": 21.5}


@pytest.mark.parametrize("limit", ["model calls", "tool calls"])
def test_an_agent_its_call_limit_ended_has_failed(dbg: AgentDebug, limit: str) -> None:
    """``ModelCallLimitMiddleware`` or ``ToolCallLimitMiddleware`` with
    ``exit_behavior="end"`` ends the run itself, saying so in a last message, and
    nothing raises: the run failed at that limit (as the prebuilt agent's "need
    more steps"), not "the graph completed"."""
    from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware

    def again(messages: list[BaseMessage]) -> AIMessage:  # looks the order up again
        n = sum(isinstance(m, AIMessage) for m in messages)
        return AIMessage("", tool_calls=[_call("lookup_order", {"order_id": "A123"}, f"n{n}")])

    middleware = (
        ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")
        if limit == "model calls"
        else ToolCallLimitMiddleware(run_limit=2, exit_behavior="end")
    )
    agent = create_agent(Says(reply=again), [lookup_order], middleware=[middleware])
    cb = AgentDebugCallback(dbg)
    agent.invoke({"messages": [HumanMessage("Refund order A123")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert f"reached its {limit[:-1]} limit" in (run.outcome.reason or "")
    (error,) = of_type(run, EventType.ERROR)
    assert error.metadata["failure_mode"] == "planning.step_limit_exhausted"
    assert error.agent_name is not None and "CallLimitMiddleware" in error.agent_name
    # the limit, not a tool error (the tool limit's own message "Tool call limit
    # exceeded" read as one gave "fix its cause (arguments, code...)"; a review's find)
    (report,) = cb.reports
    assert report.root_cause is not None
    assert report.root_cause.mode_id == "planning.step_limit_exhausted"
    # nothing raised: the summary says the agent stopped (before: "raised:
    # ModelCallLimit: ...", an exception type that does not exist)
    assert "raised" not in report.summary
    if limit == "model calls":
        assert f"{error.agent_name} stopped: the agent reached its" in report.summary


def test_an_agent_run_inside_a_chain_is_recorded(dbg: AgentDebug) -> None:
    """``create_agent``'s mark is on its start however it is run: inside a chain
    (``RunnableLambda | agent``), under ``instrument()``, it is still a graph run."""
    import agentdebug_langgraph
    from langchain_core.runnables import RunnableLambda

    agent = create_agent(Clerk(), [lookup_order_by_email, lookup_order])
    chain = RunnableLambda(lambda q: {"messages": [HumanMessage(q)]}) | agent
    cb = agentdebug_langgraph.instrument(dbg)
    with pytest.raises(ValueError, match="not an e-mail address"):
        chain.invoke("Refund order A123")
    agentdebug_langgraph.uninstrument()
    starts = of_type(cb.trajectory(), EventType.AGENT_START)
    assert [e.agent_name for e in starts] == ["model", "tools"]


def test_a_structured_response_left_by_an_earlier_turn_is_not_this_turns_answer(
    dbg: AgentDebug,
) -> None:
    """The thread keeps turn 1's ``structured_response``; turn 2 ends at the model
    call limit without a new one. Turn 2's answer is the limit's message, a
    step-limit failure, not turn 1's weather."""
    from langchain.agents.middleware import ModelCallLimitMiddleware

    limit = ModelCallLimitMiddleware(thread_limit=1, exit_behavior="end")
    saver = InMemorySaver()
    agent = create_agent(
        Says(reply=forecast), [], response_format=Weather, checkpointer=saver, middleware=[limit]
    )
    cb = AgentDebugCallback(dbg)
    config = {"callbacks": [cb], "configurable": {"thread_id": "weather"}}
    agent.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    out = agent.invoke({"messages": [HumanMessage("Weather in Rome?")]}, config)
    assert "Paris" in str(out["structured_response"])  # (the state keeps turn 1's)
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert str(run.outcome.final_answer).startswith("Model call limits exceeded")


def test_the_prebuilt_agents_structured_response_is_its_own_model_calls(dbg: AgentDebug) -> None:
    """The prebuilt agent asks its model for the structured response in a node of its
    own (``generate_structured_response``): the final answer is that call's, not the
    text answer before it."""
    import warnings

    from langchain_core.runnables import RunnableLambda
    from langgraph.prebuilt import create_react_agent

    class Plain(Says):
        def with_structured_output(self, schema: Any, **kw: Any) -> Any:
            made = Weather(city="Paris", temperature_c=21.5)
            return RunnableLambda(self.invoke) | RunnableLambda(lambda _: made)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (create_react_agent is deprecated for create_agent)
        agent = create_react_agent(Plain(reply=_weather_text), [], response_format=Weather)
    cb = AgentDebugCallback(dbg)
    agent.invoke({"messages": [HumanMessage("Weather in Paris?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    structured_call = [
        e
        for e in of_type(run, EventType.LLM_RESPONSE)
        if e.agent_name == "generate_structured_response"
    ][-1]
    assert final.output == {"city": "Paris", "temperature_c": 21.5}
    assert final.parent_id == structured_call.id


def test_a_model_answering_in_a_limits_words_has_not_hit_a_limit(dbg: AgentDebug) -> None:
    """Only an agent's own end at a limit (a message no model call gave) is a
    step-limit failure; a model's answer that happens to begin alike is an answer."""
    quoting = Says(reply=lambda _: AIMessage("Model call limits exceeded: the log said so."))
    cb = AgentDebugCallback(dbg)
    create_agent(quoting, []).invoke(
        {"messages": [HumanMessage("What did the log say?")]}, {"callbacks": [cb]}
    )
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert not of_type(run, EventType.ERROR)


def _weather_text(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage("It is 21.5 C in Paris.")


def test_an_agent_whose_model_retries_ran_out_has_failed(dbg: AgentDebug) -> None:
    """``ModelRetryMiddleware`` gives up (``on_failure="continue"``, its default): it
    ends the agent with a message of its own and nothing raises. The model never
    answered, so the run failed, at the model step; not "the graph completed"."""
    from langchain.agents.middleware import ModelRetryMiddleware

    def down(messages: list[BaseMessage]) -> AIMessage:
        raise ConnectionError("503 upstream overloaded")

    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, retry_on=(ConnectionError,))
    cb = AgentDebugCallback(dbg)
    out = create_agent(Says(reply=down), [lookup_order], middleware=[retry]).invoke(
        {"messages": [HumanMessage("Refund order A123")]}, {"callbacks": [cb]}
    )
    assert str(out["messages"][-1].content).startswith("Model call failed after 3 attempts")
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert "retries spent" in (run.outcome.reason or "")
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("model", 1)


@pytest.mark.parametrize(
    "guard_kind", ["after_model", "after_model asking a judge", "prebuilt post_model_hook"]
)
def test_a_guardrail_after_the_model_blamed_is_rerun_from_the_model_step(
    dbg: AgentDebug, guard_kind: str
) -> None:
    """A guardrail after the model (``create_agent``'s ``after_model`` hook, also one
    asking a judge model; the prebuilt agent's ``post_model_hook``) replaces the
    model's unfounded claim; the diagnosis blames the hook's step (its message is
    the final answer). The rerun forks before the model step the hook checked, so
    the model sees the directive (before the hook, the directive would follow the
    model's reply, which the hook reads as the last message, and the model would
    not run again)."""
    import warnings

    from langchain.agents.middleware import after_model
    from langgraph.prebuilt import create_react_agent

    def claims(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Order A123 costs $42.00.")
        if any(CUE in str(m.content) for m in messages):
            return AIMessage("", tool_calls=[_call("lookup_order", {"order_id": "A123"}, "k2")])
        return AIMessage("Done: your order A123 has been refunded.")  # (looked nothing up)

    judge = Says(reply=lambda _: AIMessage("unfounded"))

    def check(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]  # (as LangChain's own after_model example reads it)
        if not isinstance(last, AIMessage) or last.tool_calls:
            return {}
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {}
        if (
            "judge" in guard_kind
            and judge.invoke(f"Founded? {last.content}").content != "unfounded"
        ):
            return {}
        unsure = AIMessage("I could not verify that; please contact support.", id=last.id)
        return {"messages": [unsure], "jump_to": "end"}

    saver = InMemorySaver()
    if guard_kind == "prebuilt post_model_hook":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (create_react_agent is deprecated)
            agent = create_react_agent(
                Says(reply=claims),
                [lookup_order],
                checkpointer=saver,
                post_model_hook=lambda s: {k: v for k, v in check(s).items() if k != "jump_to"},
            )
        hook, model = "post_model_hook", "agent"
    else:
        guard = after_model(can_jump_to=["end"], name="guard")(lambda s, rt: check(s) or None)
        agent = create_agent(
            Says(reply=claims), [lookup_order], checkpointer=saver, middleware=[guard]
        )
        hook, model = "guard.after_model", "model"
    cb = AgentDebugCallback(dbg, success_check=order_found)
    agent.invoke(
        {"messages": [HumanMessage("Refund order A123")]},
        {"callbacks": [cb], "configurable": {"thread_id": "guarded"}},
    )
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == hook
    branch = verified_branch(dbg, agent, cb, order_found)
    assert [e.agent_name for e in of_type(branch, EventType.TOOL_CALL)] == [model]


def test_a_figure_invented_for_one_of_calls_made_at_once_is_blamed_on_the_answer(
    dbg: AgentDebug,
) -> None:
    """The model of LangGraph's prebuilt agent asks for three prices at once (its tool
    node runs each call as a task of its own); the pricing service fails on the second, and the answer gives
    a price for it anyway. The answer is blamed, not the outage (whose fix, "retry
    with a longer limit", leaves the invented price)."""
    from langchain_core.tools import tool

    @tool
    def price(sku: str) -> str:
        """The price of a SKU."""
        if sku == "B":
            raise ConnectionError("the pricing service timed out")
        return {"A": "10 EUR", "C": "30 EUR"}[sku]

    def reply(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("A costs 10 EUR, B costs 20 EUR, C costs 30 EUR.")
        return AIMessage("", tool_calls=[_call("price", {"sku": s}, f"p{s}") for s in "ABC"])

    def priced(state: dict[str, Any]) -> bool | str:
        said = str(state["messages"][-1].content)
        return "20 EUR" not in said or "B's price, 20 EUR, is made up (it is 25 EUR)"

    from langgraph.prebuilt import ToolNode, create_react_agent

    with pytest.warns(Warning):  # (deprecated for create_agent, whose tool node raises)
        agent = create_react_agent(Says(reply=reply), ToolNode([price], handle_tool_errors=True))
    cb = AgentDebugCallback(dbg, success_check=priced)
    agent.invoke({"messages": [HumanMessage("Prices of A, B and C?")]}, {"callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.mode_id) == ("agent", "reflection.hallucinated_fact")
    assert report.fix is not None and "say that the lookup failed" in report.fix.directive


@pytest.mark.parametrize("maker", ["create_agent", "create_react_agent"])
def test_a_return_direct_tools_answer_is_the_runs_final_answer(dbg: AgentDebug, maker: str) -> None:
    """A ``return_direct`` tool ends the agent: the app's answer is the tool's
    message. It is the final answer, filed under the tool node that wrote it
    (before: the whole final state, filed under no one)."""
    import warnings

    from langchain_core.tools import tool

    with warnings.catch_warnings():  # (moved to langchain.agents: create_agent)
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

    @tool(return_direct=True)
    def get_balance(acct: str) -> str:
        """An account's balance."""
        return f"Balance of {acct}: $42"

    model = Says(
        reply=lambda msgs: AIMessage("", tool_calls=[_call("get_balance", {"acct": "A1"}, "c1")])
    )
    make: Any = create_agent if maker == "create_agent" else create_react_agent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = make(model, [get_balance])
    cb = AgentDebugCallback(dbg)
    out = agent.invoke({"messages": [HumanMessage("balance of A1?")]}, {"callbacks": [cb]})
    assert out["messages"][-1].content == "Balance of A1: $42"
    run = cb.trajectory()
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "Balance of A1: $42" == run.outcome.final_answer
    assert final.agent_name == "tools"
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert final.step_index == result.step_index


@pytest.mark.parametrize("refused_by", ["a guardrail", "the model"])
def test_an_after_agent_hook_that_tidies_the_reply_is_not_its_author(
    dbg: AgentDebug, refused_by: str
) -> None:
    """An ``@after_agent`` hook rewrites the last message by its id, its words as
    they were (``.strip()``): the refusal it passes on is the guardrail's or the
    model's, filed and blamed there (before: the hook was, and a rerun would have
    corrected a formatter)."""
    from langchain.agents.middleware import after_agent, before_model

    @before_model(can_jump_to=["end"])
    def guardrail(state: Any, runtime: Any) -> dict[str, Any] | None:
        if "password" in state["messages"][-1].content:
            return {"messages": [AIMessage("I can't help with that.")], "jump_to": "end"}
        return None

    @after_agent
    def tidy(state: Any, runtime: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(last.content.strip(), id=last.id)]}

    question = "what is my password?" if refused_by == "a guardrail" else "an address?"
    model = Says(reply=lambda msgs: AIMessage("I can't help with that. "))
    agent = create_agent(model, [], middleware=[guardrail, tidy])
    cb = AgentDebugCallback(dbg, success_check=lambda s: "can't" not in s["messages"][-1].content)
    agent.invoke({"messages": [HumanMessage(question)]}, {"callbacks": [cb]})
    author = "guardrail.before_model" if refused_by == "a guardrail" else "model"
    (final,) = of_type(cb.trajectory(), EventType.FINAL_ANSWER)
    assert final.agent_name == author
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == author


def test_parallel_return_direct_answers_are_all_the_final_answer(dbg: AgentDebug) -> None:
    """Two ``return_direct`` calls in one turn: both answers, in order."""
    from langchain_core.tools import tool

    @tool(return_direct=True)
    def refund(order: str) -> str:
        """Refund an order."""
        return f"Refund of {order} issued."

    calls = [_call("refund", {"order": "A1"}, "r1"), _call("refund", {"order": "A2"}, "r2")]
    model = Says(reply=lambda msgs: AIMessage("", tool_calls=calls))
    cb = AgentDebugCallback(dbg)
    create_agent(model, [refund]).invoke(
        {"messages": [HumanMessage("refund A1 and A2")]}, {"callbacks": [cb]}
    )
    (final,) = of_type(cb.trajectory(), EventType.FINAL_ANSWER)
    assert final.output == "Refund of A1 issued.\nRefund of A2 issued."
