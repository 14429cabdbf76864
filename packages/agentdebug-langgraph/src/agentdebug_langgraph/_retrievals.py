"""What a node reads and says besides model and tool calls: a LangChain
retriever's documents (``memory.read``), and the custom events a node dispatches
(``dispatch_custom_event``), recorded as the node's own events.

A retrieval is evidence a diagnosis needs: an answer built on the wrong documents
fails at the answer, and is caused by the query or the index. The documents are
kept as their text, metadata and id; a retriever that raises is a ``memory.read``
with the error."""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from agentdebug import EventType

from agentdebug_langgraph._base import CaptureBase, record_note
from agentdebug_langgraph._state import NodeRun

_RETRIEVER = "langchain.retriever"
_CUSTOM = "langchain.custom_event"


class ProgramEvents(CaptureBase):
    """Retrievals and custom events inside a node."""

    ignore_retriever = False  # (the class attributes LangChain reads: see CaptureBase)
    ignore_custom_event = False

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            rec = self._node_of(parent_run_id, metadata)
            if rec is None:
                return
            name = kwargs.get("name") or (serialized or {}).get("name") or "retriever"
            self._retrievals[run_id.int] = (rec, query, time.perf_counter(), name)
        except Exception:
            self._failed("on_retriever_start")

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            started = self._retrievals.pop(run_id.int, None)
            if started is None:
                return
            docs = [_document(d) for d in documents or ()]
            self._retrieved(started, output=docs, count=len(docs))
        except Exception:
            self._failed("on_retriever_end")

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            started = self._retrievals.pop(run_id.int, None)
            if started is not None:
                self._retrieved(started, error=error)
        except Exception:
            self._failed("on_retriever_error")

    def _retrieved(
        self, started: tuple[NodeRun, Any, float, str], *, output: Any = None, **how: Any
    ) -> None:
        rec, query, at, name = started
        meta: dict[str, Any] = {"retriever": name}
        if "count" in how:
            meta["documents"] = how["count"]
        if "stopped" in how:  # (cancelled: LangChain fires neither end nor error)
            meta["stopped"] = how["stopped"]
        rec.run.session.record(
            EventType.MEMORY_READ,
            agent_name=rec.agent,
            step_index=rec.step,
            parent_id=rec.event_id,
            module=_RETRIEVER,
            input={"query": query},
            output=output,
            error=how.get("error"),
            duration_ms=(time.perf_counter() - at) * 1000.0,
            metadata=meta,
        )

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``dispatch_custom_event(name, data)`` in a node (or a tool or runnable
        it calls; ``run_id`` is the run that dispatched it): an ``observation`` of
        the node, named by ``metadata["custom_event"]``."""
        try:
            rec = self._node_of(run_id, metadata)
            if rec is None:
                return
            record_note(rec, _CUSTOM, data, {"custom_event": name})
        except Exception:
            self._failed("on_custom_event")


def _document(doc: Any) -> Any:
    """A retrieved ``Document`` as its text, metadata and id (anything else as it is)."""
    text = getattr(doc, "page_content", None)
    if not isinstance(text, str):
        return doc
    out: dict[str, Any] = {"page_content": text}
    meta = getattr(doc, "metadata", None)
    if meta:
        out["metadata"] = meta
    found = getattr(doc, "id", None)
    if found is not None:
        out["id"] = found
    return out
