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
