"""A node that read a slashed date day for month, blamed at the parse, with a real graph."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from lg_graphs import chain, scripted

INVOICE = "HARROW METALS LTD  INVOICE HM-2231  Payment due: 07/04/2025  Total GBP 22,080.00"


class Payables(TypedDict, total=False):
    document: str
    raw: str
    due: str
    pay_on: str
    notice: str


def test_a_node_that_parsed_a_uk_date_month_first_is_blamed(dbg: AgentDebug) -> None:
    reader = scripted([AIMessage(content="07/04/2025")])
    writer = scripted([AIMessage(content="Harrow Metals: HM-2231 will be paid on 2 July 2025.")])

    def read(state: Payables) -> dict[str, Any]:
        return {
            "raw": reader.invoke(
                [HumanMessage(f"Due date, as printed: {state['document']}")]
            ).content
        }

    def parse(state: Payables) -> dict[str, Any]:
        return {
            "due": datetime.strptime(state["raw"], "%m/%d/%Y").date().isoformat()
        }  # (a UK date)

    def schedule(state: Payables) -> dict[str, Any]:
        due = datetime.fromisoformat(state["due"])
        return {"pay_on": (due - timedelta(days=2)).date().isoformat()}

    def notify(state: Payables) -> dict[str, Any]:
        return {"notice": writer.invoke([HumanMessage(f"pay on {state['pay_on']}")]).content}

    def on_time(state: Payables) -> bool | str:
        return state["pay_on"] <= "2025-04-07" or (
            f"HM-2231 was due on 7 April and our notice says we'll pay on {state['pay_on']}"
        )

    callback = AgentDebugCallback(dbg, success_check=on_time)
    chain(Payables, read, parse, schedule, notify).invoke(
        {"document": INVOICE}, {"callbacks": [callback]}
    )
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert root.mode_id == "reflection.flawed_reasoning"
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 2, parse: it read '07/04/2025' as 2025-07-04"
    )
