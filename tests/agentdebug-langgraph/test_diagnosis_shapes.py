"""Failure shapes of LangGraph graphs the free tier names: a model that copied a
tool's "450 lb" as ``{"max_load_kg": 450}`` (not the tool's node before it, nor the
report that relayed the figure), a critic that rejected every revised draft until
the recursion limit (its first rejection, not its last call), a planner that dropped
the user's budget, and an agent that acted on the first page of a paginated result."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from lg_graphs import agent_loop, call, chain, scripted


@tool
def spec_sheet(model: str) -> str:
    """The manufacturer's spec sheet of a hoist."""
    return f"Model {model} hoist. Lift height 6 m. Max rated load: 450 lb. Voltage 230 V."


class Hoist(TypedDict, total=False):
    question: str
    spec: str
    max_load_kg: float
    answer: str


def test_a_figure_copied_with_the_wrong_unit_is_blamed_on_the_model_that_copied_it(
    dbg: AgentDebug,
) -> None:
    extractor = scripted([AIMessage(content='{"max_load_kg": 450}')])
    reporter = scripted([AIMessage(content="It lifts up to 450 kg: your 300 kg block is fine.")])

    def fetch(state: Hoist) -> dict[str, Any]:
        return {"spec": spec_sheet.invoke({"model": "HX-20"})}

    def extract(state: Hoist) -> dict[str, Any]:
        reply = extractor.invoke([HumanMessage(f"The max load in kg as JSON:\n{state['spec']}")])
        return {"max_load_kg": json.loads(str(reply.content))["max_load_kg"]}

    def report(state: Hoist) -> dict[str, Any]:
        reply = reporter.invoke([HumanMessage(f"Max load (kg): {state['max_load_kg']}")])
        return {"answer": reply.content}

    callback = AgentDebugCallback(
        dbg,
        success_check=lambda s: 200 <= s["max_load_kg"] <= 210 or "the max load is ~204 kg",
    )
    graph = chain(Hoist, fetch, extract, report)
    graph.invoke({"question": "Can it lift my 300 kg block?"}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "extract",
        2,
        "observation.output_misread",
    )
    assert found.fix is not None and found.fix.directive == (
        "At step 2, extract: fetch gave '450 lb', in lb; convert it (450 lb = 204.1 kg) "
        "instead of writing 'max_load_kg: 450'."
    )


class Draft(TypedDict, total=False):
    brief: str
    draft: str
    critique: str


def test_a_critic_that_rejected_every_revision_is_blamed_at_its_first_rejection(
    dbg: AgentDebug,
) -> None:
    writer = scripted(
        [AIMessage(content=f"Cold rain, draft {n}, on the tin roofs") for n in range(9)]
    )
    critic = scripted(
        [AIMessage(content=f"REVISE: line {n} has the wrong word count.") for n in range(9)]
    )

    def write(state: Draft) -> dict[str, Any]:
        return {
            "draft": writer.invoke(
                [HumanMessage(f"{state['brief']} {state.get('critique')}")]
            ).content
        }

    def critique(state: Draft) -> dict[str, Any]:
        return {"critique": critic.invoke([HumanMessage(state["draft"])]).content}

    g = StateGraph(Draft)
    g.add_node("write", write)
    g.add_node("critique", critique)
    g.add_edge(START, "write")
    g.add_edge("write", "critique")
    g.add_conditional_edges(
        "critique", lambda s: END if s["critique"].startswith("APPROVED") else "write"
    )
    callback = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        g.compile().invoke({"brief": "a haiku"}, {"callbacks": [callback], "recursion_limit": 8})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "critique",
        2,
        "verification.incorrect_verification",
    )
    assert root.rationale.startswith("critique rejected all 4 drafts write wrote")


class Trip(TypedDict, total=False):
    request: str
    tasks: list[dict[str, Any]]
    picks: list[dict[str, Any]]
    itinerary: str


def test_a_planner_that_dropped_the_users_budget_is_blamed(dbg: AgentDebug) -> None:
    """The user's "max 120 EUR per night" went into the planner's prompt and out of
    nothing it wrote; the search and the reply that came after only followed it."""
    planner = scripted(
        [AIMessage(content='[{"city": "Lisbon", "nights": 2, "max_price_eur": null}]')]
    )
    writer = scripted([AIMessage(content="Two nights at Memmo Alfama in Lisbon, 245 EUR a night.")])

    def plan(state: Trip) -> dict[str, Any]:
        reply = planner.invoke([HumanMessage(f"Plan hotel searches as JSON: {state['request']}")])
        return {"tasks": json.loads(str(reply.content))}

    def search(state: Trip) -> dict[str, Any]:
        return {"picks": [{"name": "Memmo Alfama", "price_eur": 245}]}

    def compose(state: Trip) -> dict[str, Any]:
        reply = writer.invoke([HumanMessage(f"Hotels: {state['picks']}. Write the itinerary.")])
        return {"itinerary": reply.content}

    def within_budget(state: Trip) -> bool | str:
        over = [p["name"] for p in state["picks"] if p["price_eur"] > 120]
        return not over or f"hotels over the 120 EUR/night budget were chosen: {over}"

    callback = AgentDebugCallback(dbg, success_check=within_budget)
    request = "Hotels in Lisbon for 2 nights, max 120 EUR per night, free cancellation."
    chain(Trip, plan, search, compose).invoke({"request": request}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("plan", 1, "memory.context_loss")
    assert found.fix is not None and found.fix.directive.startswith("At step 1, plan: carry '120'")


STALE = ["T-4410", "T-4417", "T-4431", "T-4436", "T-4502", "T-4519", "T-4523"]


def test_an_agent_that_acted_on_the_first_page_of_a_result_is_blamed(dbg: AgentDebug) -> None:
    closed: set[str] = set()

    @tool
    def list_stale(page: int = 1) -> str:
        """Stale tickets, four a page."""
        more = page * 4 < len(STALE)
        return json.dumps(
            {"tickets": STALE[(page - 1) * 4 : page * 4], "next_page": page + 1 if more else None}
        )

    @tool
    def close(ids: list[str]) -> str:
        """Close tickets."""
        closed.update(ids)
        return f"closed {len(ids)}"

    model = scripted(
        [
            call("list_stale", {"page": 1}, "c1"),
            call("close", {"ids": STALE[:4]}, "c2"),
            AIMessage(content="Done: I closed all the stale tickets."),
        ]
    )
    graph = agent_loop(model, ToolNode([list_stale, close]))

    def all_closed(state: Any) -> bool | str:
        left = [t for t in STALE if t not in closed]
        return not left or f"still open: {', '.join(left)}"

    callback = AgentDebugCallback(dbg, success_check=all_closed)
    graph.invoke({"messages": [("user", "Close every stale ticket.")]}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        3,
        "observation.poor_retrieval",
    )


ORDERS = {
    "ORD-58213": {"customer": "C-4410", "item": "kettle", "status": "processing"},
    "ORD-20931": {"customer": "C-1187", "item": "garden hose", "status": "processing"},
}


def test_a_model_that_made_up_an_order_id_is_blamed_not_the_answer(dbg: AgentDebug) -> None:
    """The agent looked the customer up (no orders in the profile) and cancelled an
    id nothing had given: another customer's order. Before, the answer that reported
    the cancellation was blamed for losing the id."""
    orders = {k: dict(v) for k, v in ORDERS.items()}

    @tool
    def get_customer(email: str) -> str:
        """A customer's profile, by e-mail."""
        return '{"customer_id": "C-4410", "name": "Sam Ortiz", "tier": "gold"}'

    @tool
    def cancel_order(order_id: str) -> str:
        """Cancel an order that has not shipped."""
        orders[order_id]["status"] = "cancelled"
        return f"{order_id} cancelled"

    model = scripted(
        [
            call("get_customer", {"email": "sam@example.com"}, "c1"),
            call("cancel_order", {"order_id": "ORD-20931"}, "c2"),
            AIMessage(content="Done! Your order is cancelled and refunded."),
        ]
    )
    graph = agent_loop(model, ToolNode([get_customer, cancel_order]))

    def kettle_cancelled(state: Any) -> bool | str:
        status = orders["ORD-58213"]["status"]
        return status == "cancelled" or f"Sam's kettle order is still {status}"

    callback = AgentDebugCallback(dbg, success_check=kettle_cancelled)
    ask = "Cancel the kettle I ordered yesterday, please. I'm sam@example.com"
    graph.invoke({"messages": [("user", ask)]}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        3,
        "reflection.hallucinated_fact",
    )
    assert "order_id='ORD-20931', which nothing in the run had given" in (root.rationale or "")


class Incident(TypedDict, total=False):
    inc: dict[str, Any]
    text: str
    posted: str


def test_a_node_that_posted_to_another_channel_than_it_was_given_is_blamed(
    dbg: AgentDebug,
) -> None:
    """A plain node posts the model's update to a default channel though its state
    held the incident's. Before, the model whose prompt had held the channel was
    blamed for losing it."""
    writer = scripted([AIMessage(content="SEV2 mitigated: checkout latency is back to normal.")])

    @tool
    def post_message(channel: str, text: str) -> str:
        """Post to a chat channel."""
        return f"posted to {channel}"

    def fetch(state: Incident) -> dict[str, Any]:
        return {"inc": {"id": "INC-4411", "severity": "SEV2", "channel": "#inc-4411"}}

    def summarize(state: Incident) -> dict[str, Any]:
        return {"text": writer.invoke([HumanMessage(f"Status update for {state['inc']}")]).content}

    def post(state: Incident) -> dict[str, Any]:
        return {"posted": post_message.invoke({"channel": "#general", "text": state["text"]})}

    def to_the_incident(state: Incident) -> bool | str:
        where = state["posted"].removeprefix("posted to ")
        return where == "#inc-4411" or f"posted to {where}, not the incident channel #inc-4411"

    callback = AgentDebugCallback(dbg, success_check=to_the_incident)
    chain(Incident, fetch, summarize, post).invoke({}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("post", 3, "memory.context_loss")
    assert found.fix is not None and found.fix.directive == (
        "At step 3, post: call post_message with channel='#inc-4411', the value the step "
        "was given, not '#general'."
    )


class Receipt(TypedDict, total=False):
    text: str
    fields: dict[str, Any]
    eur: float


def test_a_receipt_in_yen_extracted_as_dollars_is_blamed_on_the_extraction(
    dbg: AgentDebug,
) -> None:
    extractor = scripted([AIMessage(content='```json\n{"amount": 18400, "currency": "USD"}\n```')])
    rates = {"USD": 0.92, "JPY": 0.0059}

    def read(state: Receipt) -> dict[str, Any]:
        return {"text": "HOTEL GRACERY, Tokyo. 1 night. Total JPY 18,400"}

    def extract(state: Receipt) -> dict[str, Any]:
        reply = str(
            extractor.invoke([HumanMessage(f"Amount and currency:\n{state['text']}")]).content
        )
        return {"fields": json.loads(reply.strip("`").removeprefix("json"))}

    def convert(state: Receipt) -> dict[str, Any]:
        return {"eur": state["fields"]["amount"] * rates[state["fields"]["currency"]]}

    callback = AgentDebugCallback(
        dbg, success_check=lambda s: s["eur"] < 250 or f"claim of {s['eur']:.0f} EUR rejected"
    )
    chain(Receipt, read, extract, convert).invoke({}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index) == ("extract", 2)
    assert "(18400 JPY is not 18400 USD)" in (root.rationale or "")


@tool
def get_quote(sku: str, qty: int) -> dict[str, Any]:
    """The price of an order."""
    return {"sku": sku, "qty": qty, "unit_price": 3200, "currency": "JPY", "total": 3200 * qty}


@tool
def gateway_charge(amount_minor: int, currency: str) -> str:
    """Charge the card on file, in the currency's minor units."""
    return f"ch_3PZ0001 succeeded: {amount_minor:,} {currency} minor units"


class Order(TypedDict, total=False):
    sku: str
    qty: int
    quote: dict[str, Any]
    charge: str
    receipt: str


def test_an_amount_a_plain_node_computed_wrong_is_blamed_on_that_node(dbg: AgentDebug) -> None:
    """Yen has no minor unit: ``round(total * 100)`` charges a hundred times the quote.
    The node that computed it called no model and was given nothing holding it; the
    receipt's model, which wrote the quote's total faithfully, is not blamed."""
    writer = scripted([AIMessage(content="Receipt: 40 x NITRILE-M-200, total 128,000 JPY.")])

    def price(state: Order) -> dict[str, Any]:
        return {"quote": get_quote.invoke({"sku": state["sku"], "qty": state["qty"]})}

    def charge(state: Order) -> dict[str, Any]:
        amount = round(state["quote"]["total"] * 100)  # (right for cents, not for yen)
        return {"charge": gateway_charge.invoke({"amount_minor": amount, "currency": "JPY"})}

    def receipt(state: Order) -> dict[str, Any]:
        return {"receipt": writer.invoke([HumanMessage(f"A receipt for {state['quote']}")]).content}

    def charged_once(state: Order) -> bool | str:
        wanted = state["quote"]["total"]
        return f"{wanted:,}" in state["charge"] or (
            f"the gateway recorded {state['charge'].split(': ')[1]}; the quote was {wanted:,} JPY"
        )

    callback = AgentDebugCallback(dbg, success_check=charged_once)
    chain(Order, price, charge, receipt).invoke(
        {"sku": "NITRILE-M-200", "qty": 40}, {"callbacks": [callback]}
    )
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "charge",
        2,
        "reflection.flawed_reasoning",
    )
    assert [e.quote for e in root.evidence] == ["12800000"]
    assert found.fix is not None and found.fix.directive.startswith(
        "At step 2, charge: the step's code made '12800000', which the failure names"
    )


@tool
def wms_counts(warehouse: str) -> dict[str, int]:
    """The warehouse's stock by SKU."""
    return {"TR2-44": 0, "TR2-43": 5, "HK-JKT-M": 9, "SOCK-3P": 40}


@tool
def update_storefront(updates: dict[str, int]) -> str:
    """Set the storefront's stock of these SKUs."""
    return f"updated {len(updates)} SKUs"


class Stock(TypedDict, total=False):
    listed: dict[str, int]
    counts: dict[str, int]
    updates: dict[str, int]
    pushed: str


def test_a_selection_whose_condition_dropped_a_zero_is_blamed_on_that_node(
    dbg: AgentDebug,
) -> None:
    """``if qty and ...`` reads the sold-out SKU's 0 as false: the selection left it
    out, the push and the report after it worked faithfully on what they were given."""

    def fetch(state: Stock) -> dict[str, Any]:
        return {"counts": wms_counts.invoke({"warehouse": "LDS-1"})}

    def diff(state: Stock) -> dict[str, Any]:
        listed = state["listed"]
        return {
            "updates": {
                sku: qty
                for sku, qty in state["counts"].items()
                if qty and qty != listed.get(sku)  # (0 is falsy: the sold-out SKU is skipped)
            }
        }

    def push(state: Stock) -> dict[str, Any]:
        return {"pushed": update_storefront.invoke({"updates": state["updates"]})}

    def in_sync(state: Stock) -> bool | str:
        stale = [
            sku for sku, qty in state["counts"].items() if qty == 0 and sku not in state["updates"]
        ]
        return not stale or f"{stale[0]} shows {state['listed'][stale[0]]} in stock but has 0"

    callback = AgentDebugCallback(dbg, success_check=in_sync)
    chain(Stock, fetch, diff, push).invoke(
        {"listed": {"TR2-44": 6, "TR2-43": 2, "HK-JKT-M": 11, "SOCK-3P": 40}},
        {"callbacks": [callback]},
    )
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("diff", 2, "memory.context_loss")
    assert found.fix is not None and found.fix.directive.startswith(
        "At step 2, diff: 'TR2-44' was among the items fetch gave"
    )


class Sales(TypedDict, total=False):
    rows: list[dict[str, Any]]
    clean: list[dict[str, Any]]
    totals: dict[str, float]
    report: str


def test_a_total_summed_right_from_rows_a_dedupe_dropped_is_blamed_on_the_dedupe(
    dbg: AgentDebug,
) -> None:
    export = [
        ("SO-1001", "Acme GmbH", "EMEA", 1200.0),
        ("SO-1002", "Borealis AB", "EMEA", 850.0),
        ("SO-1003", "Acme GmbH", "EMEA", 1840.0),
        ("SO-1004", "Cobalt Inc", "NA", 2300.0),
        ("SO-1002", "Borealis AB", "EMEA", 850.0),  # (a page fetched twice)
        ("SO-1006", "Borealis AB", "EMEA", 2260.0),
    ]
    ledger = {"EMEA": 6150.0, "NA": 2300.0}
    writer = scripted([AIMessage(content="Q2: EMEA $2,050.00, NA $2,300.00. EMEA is down.")])

    def extract(state: Sales) -> dict[str, Any]:
        keys = ("order_id", "customer", "region", "amount")
        return {"rows": [dict(zip(keys, row, strict=True)) for row in export]}

    def dedupe(state: Sales) -> dict[str, Any]:
        seen, out = set(), []
        for r in state["rows"]:
            if (r["customer"], r["region"]) not in seen:  # (not the order id)
                seen.add((r["customer"], r["region"]))
                out.append(r)
        return {"clean": out}

    def aggregate(state: Sales) -> dict[str, Any]:
        totals: dict[str, float] = {}
        for r in state["clean"]:
            totals[r["region"]] = totals.get(r["region"], 0.0) + r["amount"]
        return {"totals": totals}

    def report(state: Sales) -> dict[str, Any]:
        return {"report": writer.invoke([HumanMessage(f"Summarise {state['totals']}")]).content}

    def matches_ledger(state: Sales) -> bool | str:
        wrong = [
            f"{region} revenue reported as {state['totals'][region]:,.2f} but the ledger "
            f"shows {want:,.2f}"
            for region, want in ledger.items()
            if state["totals"].get(region) != want
        ]
        return "; ".join(wrong) or True

    callback = AgentDebugCallback(dbg, success_check=matches_ledger)
    chain(Sales, extract, dedupe, aggregate, report).invoke({}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("dedupe", 2, "memory.context_loss")
    assert found.fix is not None and "SO-1003" in found.fix.directive
    assert "SO-1006" in found.fix.directive and "SO-1002" not in found.fix.directive


class Renewal(TypedDict, total=False):
    account: dict[str, Any]
    template: str
    body: str


def test_cents_a_render_node_wrote_as_dollars_are_blamed_on_it(dbg: AgentDebug) -> None:
    drafter = scripted([AIMessage(content="Your {plan} plan renews at {price} a year.")])

    def load_account(state: Renewal) -> dict[str, Any]:
        return {"account": {"plan": "Business", "price_cents": 129900, "currency": "USD"}}

    def draft(state: Renewal) -> dict[str, Any]:
        said = drafter.invoke([HumanMessage(f"A renewal notice for {state['account']}")])
        return {"template": said.content}

    def render(state: Renewal) -> dict[str, Any]:
        account = state["account"]
        price = f"${account['price_cents']:,.2f}"  # (cents, written as dollars)
        return {"body": state["template"].format(plan=account["plan"], price=price)}

    def sane_price(state: Renewal) -> bool | str:
        return "$1,299.00" in state["body"] or f"the customer asked: {state['body']}?"

    callback = AgentDebugCallback(dbg, success_check=sane_price)
    chain(Renewal, load_account, draft, render).invoke({}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("render", 3)
    assert found.fix is not None and "divide by 100" in found.fix.directive


class Expenses(TypedDict, total=False):
    lines: list[dict[str, str]]
    items: list[dict[str, Any]]
    total: float


def test_a_parse_that_stopped_at_the_thousands_separator_is_blamed(dbg: AgentDebug) -> None:
    import re

    def extract(state: Expenses) -> dict[str, Any]:
        return {
            "lines": [{"id": "EXP-1", "amount": "$86.40"}, {"id": "EXP-2", "amount": "$1,250.00"}]
        }

    def parse(state: Expenses) -> dict[str, Any]:
        read = [re.search(r"\$?(\d+(?:\.\d{1,2})?)", ln["amount"]) for ln in state["lines"]]
        return {
            "items": [
                {**ln, "amount_usd": float(m.group(1)) if m else 0.0}
                for ln, m in zip(state["lines"], read, strict=True)
            ]
        }

    def total(state: Expenses) -> dict[str, Any]:
        return {"total": round(sum(i["amount_usd"] for i in state["items"]), 2)}

    def paid_in_full(state: Expenses) -> bool | str:
        return state["total"] == 1336.4 or (
            f"reimbursed ${state['total']:,.2f}; the hotel folio alone was $1,250"
        )

    callback = AgentDebugCallback(dbg, success_check=paid_in_full)
    chain(Expenses, extract, parse, total).invoke({}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert "'amount_usd' 1.0: the 1,250.00 written there, misread" in (root.rationale or "")
