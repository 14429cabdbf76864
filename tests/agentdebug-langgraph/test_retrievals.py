"""What a node reads and says besides model and tool calls: a retriever's
documents as the node's `memory.read`, and its custom events as observations."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.schema import AgentTrajectory
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.callbacks import CallbackManagerForRetrieverRun, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph


class Shelf(BaseRetriever):
    """A retriever over a fixed list: the documents whose text holds the query."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if query == "boom":
            raise ConnectionError("the index is down")
        return [d for d in self.docs if query in d.page_content]


SHELF = Shelf(
    docs=[
        Document(page_content="refunds take 14 days", metadata={"src": "faq"}, id="d1"),
        Document(page_content="refunds need a receipt", metadata={"src": "policy"}, id="d2"),
        Document(page_content="shipping is free", metadata={"src": "faq"}, id="d3"),
    ]
)


class Q(TypedDict):
    question: str
    answer: str


def _graph(query: str) -> Any:
    def retrieve(state: Q) -> dict[str, Any]:
        dispatch_custom_event("progress", {"stage": "retrieving"})
        try:
            docs = SHELF.invoke(query)
        except ConnectionError:
            docs = []
        return {"answer": "; ".join(d.page_content for d in docs)}

    g = StateGraph(Q)
    g.add_node("retrieve", retrieve)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", END)
    return g.compile()


def _run(dbg: AgentDebug, query: str) -> AgentTrajectory:
    callback = AgentDebugCallback(dbg)
    _graph(query).invoke({"question": "?", "answer": ""}, config={"callbacks": [callback]})
    assert callback.last_run_id is not None
    return callback.trajectory()  # (an async run's end is written after it returns)


def test_a_retrieval_is_the_node_s_memory_read_with_its_documents(dbg: AgentDebug) -> None:
    run = _run(dbg, "refunds")
    start = next(e for e in run.events if e.type is EventType.AGENT_START)
    (read,) = [e for e in run.events if e.type is EventType.MEMORY_READ]
    assert (read.agent_name, read.step_index, read.parent_id) == (
        "retrieve",
        start.step_index,
        start.id,
    )
    assert read.input == {"query": "refunds"}
    assert read.output == [
        {"page_content": "refunds take 14 days", "metadata": {"src": "faq"}, "id": "d1"},
        {"page_content": "refunds need a receipt", "metadata": {"src": "policy"}, "id": "d2"},
    ]
    assert read.metadata["documents"] == 2 and read.metadata["retriever"] == "Shelf"
    assert read.error is None and read.duration_ms is not None


def test_a_retriever_that_raises_is_a_memory_read_with_the_error(dbg: AgentDebug) -> None:
    run = _run(dbg, "boom")
    (read,) = [e for e in run.events if e.type is EventType.MEMORY_READ]
    assert read.error is not None
    assert read.error.type == "ConnectionError" and "index is down" in read.error.message
    assert read.agent_name == "retrieve"


def test_a_custom_event_is_an_observation_of_the_node(dbg: AgentDebug) -> None:
    run = _run(dbg, "refunds")
    (said,) = [e for e in run.events if e.metadata.get("custom_event")]
    assert said.type is EventType.OBSERVATION
    assert (said.agent_name, said.output, said.metadata["custom_event"]) == (
        "retrieve",
        {"stage": "retrieving"},
        "progress",
    )


def test_a_retrieval_a_timeout_cancelled_is_recorded_as_stopped(dbg: AgentDebug) -> None:
    import asyncio

    class Slow(BaseRetriever):
        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            await asyncio.sleep(10)
            return []

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            raise NotImplementedError

    async def retrieve(state: Q) -> dict[str, Any]:
        await Slow().ainvoke("refunds")
        return {"answer": "never"}

    g = StateGraph(Q)
    g.add_node("retrieve", retrieve)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", END)
    callback = AgentDebugCallback(dbg)

    async def main() -> None:
        await asyncio.wait_for(
            g.compile().ainvoke({"question": "?", "answer": ""}, config={"callbacks": [callback]}),
            timeout=0.2,
        )

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert callback._retrievals == {}  # nothing left behind in a long-lived handler
    assert callback.last_run_id is not None
    run = callback.trajectory()
    (read,) = [e for e in run.events if e.type is EventType.MEMORY_READ]
    assert read.input == {"query": "refunds"} and read.agent_name == "retrieve"
    assert read.metadata["stopped"] == "the run ended before the retriever answered"


CONTRACT = [
    Document(page_content="1. Services. The Supplier provides cloud hosting per Schedule A."),
    Document(page_content="4. Fees. The Customer pays the monthly fees in Schedule B."),
    Document(page_content="11. Termination. Either party may end it with 90 days' notice."),
]


class Rag(TypedDict, total=False):
    question: str
    docs: list[Document]
    context: list[Document]
    answer: str


def test_a_reranker_that_dropped_the_chunk_the_answer_needed_is_blamed(dbg: AgentDebug) -> None:
    """The answering model said, truthfully, that its excerpts lack the notice period:
    the reranker that kept the two chunks sharing the most words with the question
    dropped the one that holds it."""
    from langchain_core.messages import AIMessage, HumanMessage
    from lg_graphs import chain, scripted

    model = scripted([AIMessage(content="The excerpts do not give a notice period.")])

    def retrieve(state: Rag) -> dict[str, Any]:
        return {"docs": Shelf(docs=CONTRACT).invoke(".")}

    def rerank(state: Rag) -> dict[str, Any]:
        words = set(state["question"].lower().split())
        ranked = sorted(
            state["docs"], key=lambda d: -len(words & set(d.page_content.lower().split()))
        )
        return {"context": ranked[:2]}

    def answer(state: Rag) -> dict[str, Any]:
        context = "\n".join(d.page_content for d in state["context"])
        reply = model.invoke([HumanMessage(f"{context}\n\n{state['question']}")])
        return {"answer": reply.content}

    callback = AgentDebugCallback(
        dbg,
        success_check=lambda s: "90 days" in s["answer"] or "no 90-day termination notice given",
    )
    question = "what are the services and the monthly fees of the contract, and its notice period"
    chain(Rag, retrieve, rerank, answer).invoke({"question": question}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.mode_id) == ("rerank", "memory.context_loss")
    assert report.fix is not None and report.fix.directive.startswith(
        'At step 2, rerank: keep "11. Termination. Either party may end it with 90 days\' notice." '
        "(what retrieve found at step 1); the selection into 'context' dropped it"
    )
