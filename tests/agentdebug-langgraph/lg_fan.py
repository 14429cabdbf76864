"""A map-reduce graph whose ``Send`` packets carry no messages, rebuilt by a
stored run's ``graph_factory`` from the SQLite file the environment names, and the
``directive_update`` that corrects what its fan-out edge reads."""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Send
from lg_graphs import sqlite_saver


class Fanned(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


def fan(state: Fanned) -> list[Send]:
    return [Send("work", {"item": i}) for i in state["items"]]


def work(state: dict[str, int]) -> dict[str, list[int]]:
    if state["item"] == 2:
        raise ValueError("item 2 is bad")
    return {"results": [state["item"] * 10]}


def fan_graph_from_env() -> Any:
    g = StateGraph(Fanned)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan, ["work"])
    return g.compile(checkpointer=sqlite_saver(os.environ["LG_TEST_DB"]))


def fixed(request: Any, snapshot: Any) -> dict[str, Any]:
    """The correction where the edge reads it: the bad item replaced."""
    return {"items": [20 if i == 2 else i for i in snapshot.values["items"]]}


NOT_A_FUNCTION = 42


def one_arg(request: Any) -> dict[str, Any]:
    return {}


async def too_late(request: Any, snapshot: Any) -> dict[str, Any]:
    return {}
