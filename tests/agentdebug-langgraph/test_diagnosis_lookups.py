"""Lookups that fetched the wrong record, blamed at the lookup, with real graphs."""

from __future__ import annotations

from typing import Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from lg_graphs import chain, scripted

MANUALS = {
    "X20": "X20 push mower, section 6.2: torque the blade bolt to 18 N·m.",
    "X200": "X200 riding mower, section 9.4: torque the spindle blade bolt to 45 N·m.",
}


class PrefixManuals(BaseRetriever):
    """Finds a model's manual by prefix, in the index's order: X20 before X200."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        for model, text in MANUALS.items():
            if query.upper().startswith(model):
                return [Document(page_content=text, metadata={"model": model})]
        return []


class Support(TypedDict, total=False):
    question: str
    model: str
    excerpt: str
    answer: str


def test_a_retriever_that_matched_a_namesake_s_manual_is_blamed(dbg: AgentDebug) -> None:
    extractor = scripted([AIMessage(content="X200")])
    writer = scripted([AIMessage(content="For your X200, torque the blade bolt to 18 N·m.")])
    manuals = PrefixManuals()

    def rewrite(state: Support) -> dict[str, Any]:
        return {"model": extractor.invoke([HumanMessage(state["question"])]).content}

    def retrieve(state: Support) -> dict[str, Any]:
        docs = manuals.invoke(state["model"])
        return {"excerpt": docs[0].page_content if docs else ""}

    def answer(state: Support) -> dict[str, Any]:
        said = writer.invoke([HumanMessage(f"{state['excerpt']}\n{state['question']}")])
        return {"answer": said.content}

    def safe(state: Support) -> bool | str:
        return "45 N·m" in state["answer"] or (
            f"the bot told an X200 owner: {state['answer']!r}; that is under spec"
        )

    callback = AgentDebugCallback(dbg, success_check=safe)
    question = "I sharpened the blades on my X200. What torque for the blade bolt?"
    chain(Support, rewrite, retrieve, answer).invoke(
        {"question": question}, {"callbacks": [callback]}
    )
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("retrieve", 2)
    assert root.mode_id == "observation.poor_retrieval"
    assert report.fix is not None and "the record of 'X20' for 'X200'" in report.fix.directive


def test_a_task_whose_cache_served_another_employee_s_account_is_blamed(dbg: AgentDebug) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task

    provider = {
        "E-1182": {"election": 3200.0, "used": 1320.0},
        "E-2075": {"election": 1500.0, "used": 1260.0},
    }
    cache: dict[Any, dict[str, Any]] = {}
    replier = scripted([
        AIMessage(content="Your $210.00 claim is approved; $1,670.00 left."),
        AIMessage(content="Your $650.00 claim is approved; $1,230.00 left."),
    ])  # fmt: skip

    @task
    def get_account(employee_id: str, plan_year: int) -> dict[str, Any]:
        if plan_year not in cache:  # (keyed by the year alone: the bug)
            row = provider[employee_id]
            cache[plan_year] = {
                "employee_id": employee_id, "available": row["election"] - row["used"]
            }  # fmt: skip
        return cache[plan_year]

    @task
    def reply(amount: float, account: dict[str, Any]) -> str:
        left = account["available"] - amount
        said = replier.invoke([HumanMessage(f"claim ${amount:.2f} approved, ${left:.2f} left")])
        return str(said.content)

    @entrypoint(checkpointer=InMemorySaver())
    def claim(request: dict[str, Any]) -> dict[str, Any]:
        account = get_account(request["employee_id"], 2025).result()
        return {"message": reply(request["amount"], account).result(), **request}

    def within_balance(state: dict[str, Any]) -> bool | str:
        row = provider[state["employee_id"]]
        return state["amount"] <= row["election"] - row["used"] or (
            f"{state['employee_id']} was told the claim is approved, but only "
            f"${row['election'] - row['used']:.2f} was available"
        )

    callback = AgentDebugCallback(dbg, success_check=within_balance)
    for n, (who, amount) in enumerate((("E-1182", 210.0), ("E-2075", 650.0))):
        config = {"configurable": {"thread_id": f"claim-{n}"}, "callbacks": [callback]}
        claim.invoke({"employee_id": who, "amount": amount}, config)
    (report,) = callback.reports  # (the first claim was within its balance)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("claim/get_account", 2)
    assert root.mode_id == "observation.poor_retrieval"
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 2, claim/get_account: it returned the record of employee_id 'E-1182' when "
        "asked for 'E-2075'"
    )


def test_a_lookup_whose_whole_list_the_model_acted_on_is_blamed(dbg: AgentDebug) -> None:
    """The tool matches feeders by prefix ("F12" lets in F121's customers); the model
    notifies every customer it returned; the failure names F121's. The tool's run is
    blamed, not the model's turn, which chose nothing."""
    import json

    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from lg_graphs import call

    feeders = {"C-500113": ("F12", "Oak Hollow Vet Clinic"), "C-611019": ("F121", "Devon Marsh")}
    notified: list[str] = []

    @tool
    def list_affected_customers(feeder_id: str) -> str:
        """The customers a feeder serves."""
        return json.dumps(
            [
                {"customer_id": cid, "name": name}
                for cid, (feeder, name) in feeders.items()
                if feeder.startswith(feeder_id)
            ]
        )

    @tool
    def queue_notices(customer_ids: list[str]) -> str:
        """Queue outage notices."""
        notified.extend(customer_ids)
        return "queued"

    model = scripted(
        [
            call("list_affected_customers", {"feeder_id": "F12"}, "c1"),
            call("queue_notices", {"customer_ids": ["C-500113", "C-611019"]}, "c2"),
            AIMessage(content="Notices queued for every customer on F12."),
        ]
    )
    g = StateGraph(MessagesState)
    g.add_node("planner", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([list_affected_customers, queue_notices]))
    g.add_edge(START, "planner")
    g.add_conditional_edges(
        "planner", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    g.add_edge("tools", "planner")

    def check(state: Any) -> bool | str:
        wrong = [feeders[c][1] for c in notified if feeders[c][0] != "F12"]
        return not wrong or f"{', '.join(wrong)} got an outage notice, but is not on F12"

    callback = AgentDebugCallback(dbg, success_check=check)
    g.compile().invoke(
        {"messages": [HumanMessage("Notify everyone on feeder F12 of Tuesday's outage.")]},
        {"callbacks": [callback]},
    )
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tools", 2)
    assert root.mode_id == "observation.poor_retrieval"
    assert report.fix is not None and "'Devon Marsh'" in report.fix.directive


def test_a_task_error_the_entrypoint_caught_is_not_the_fault(dbg: AgentDebug) -> None:
    """Functional API: the entrypoint catches the primary model's timeout and asks a
    backup, whose answer is wrong. The timeout was handled (a fallback), as in one
    StateGraph node; the backup's answer is what to look at (a review's find: the
    timeout was blamed as "never resolved", with "retry with a longer limit")."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatResult
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task

    class TimesOut(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "times-out"

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> ChatResult:
            raise TimeoutError("the primary model timed out")

    backup = scripted([AIMessage("The capital of France is Lyon.")])

    @task
    def ask_primary(q: str) -> str:
        return str(TimesOut().invoke([HumanMessage(q)]).content)

    @task
    def ask_backup(q: str) -> str:
        return str(backup.invoke([HumanMessage(q)]).content)

    @entrypoint(checkpointer=InMemorySaver())
    def wf(q: str) -> str:
        try:
            return ask_primary(q).result()
        except TimeoutError:
            return ask_backup(q).result()

    cb = AgentDebugCallback(dbg, success_check=lambda a: "Paris" in a or "wrong capital")
    wf.invoke("capital of France?", {"callbacks": [cb], "configurable": {"thread_id": "f"}})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and root.agent_name == "wf/ask_backup"
    assert not any(f.mode_id == "verification.premature_success" for f in report.findings)
