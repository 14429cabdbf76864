"""Slips a right-looking step carried on, blamed where they were made, with real
graphs: UTC times relabelled as local, a tool call contradicting a figure its JSON
tool result gave, and a pipeline of code nodes whose nodes that wrote keys of their
own are not blamed for losing what stayed in the state."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TypedDict
from zoneinfo import ZoneInfo

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from lg_graphs import agent_loop, call, chain, scripted

PUNCHES = [
    {"emp": "E-311", "in": "2024-04-13T14:00:00Z", "out": "2024-04-13T20:00:00Z"},
    {"emp": "E-311", "in": "2024-04-15T00:00:00Z", "out": "2024-04-15T04:30:00Z"},
]


class Pay(TypedDict, total=False):
    punches: list[dict[str, str]]
    shifts: list[dict[str, str]]
    weekend_hours: float
    flags: list[str]
    gross: float


def _payroll(localize: Any) -> Any:
    def load(state: Pay) -> dict[str, Any]:
        return {"punches": PUNCHES}

    def check(state: Pay) -> dict[str, Any]:
        return {}  # (a check that found nothing to flag writes nothing)

    def bucket(state: Pay) -> dict[str, Any]:
        days = [datetime.fromisoformat(s["start"]).strftime("%a") for s in state["shifts"]]
        return {"weekend_hours": 6.0 * sum(d in ("Sat", "Sun") for d in days)}

    def pay(state: Pay) -> dict[str, Any]:
        return {"gross": 24.0 * 10.5 + 36.0 * state["weekend_hours"]}

    return chain(Pay, load, localize, check, bucket, pay)


def _paid_weekends(state: Pay) -> bool | str:
    return state["weekend_hours"] == 12.0 or (
        "Marcus says his Sunday-evening shift was paid like a weekday shift, $54.00 short"
    )


def test_a_node_that_relabelled_utc_punches_as_local_time_is_blamed(dbg: AgentDebug) -> None:
    def localize(state: Pay) -> dict[str, Any]:
        tz = ZoneInfo("America/Chicago")
        shifts = []
        for p in state["punches"]:
            start = datetime.fromisoformat(p["in"].removesuffix("Z")).replace(tzinfo=tz)
            end = datetime.fromisoformat(p["out"].removesuffix("Z")).replace(tzinfo=tz)
            shifts.append({"start": start.isoformat(), "end": end.isoformat()})
        return {"shifts": shifts}

    callback = AgentDebugCallback(dbg, success_check=_paid_weekends)
    _payroll(localize).invoke({}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("localize", 2)
    assert root.mode_id == "reflection.flawed_reasoning"
    assert report.fix is not None and report.fix.directive == (
        "At step 2, localize: it wrote '2024-04-13T14:00:00Z' as '2024-04-13T14:00:00-05:00', "
        "the same clock time labelled with another zone; convert it to the zone "
        "(astimezone), do not relabel it (replace(tzinfo=...))."
    )


def test_a_node_that_converted_the_punches_is_not_blamed(dbg: AgentDebug) -> None:
    """Converted right, the run passes; the same graph with the check asking for more
    weekend hours than were worked fails, and no step is blamed for a zone."""

    def localize(state: Pay) -> dict[str, Any]:
        tz = ZoneInfo("America/Chicago")
        return {
            "shifts": [
                {
                    "start": datetime.fromisoformat(p["in"]).astimezone(tz).isoformat(),
                    "end": datetime.fromisoformat(p["out"]).astimezone(tz).isoformat(),
                }
                for p in state["punches"]
            ]
        }

    callback = AgentDebugCallback(dbg, success_check=_paid_weekends)
    _payroll(localize).invoke({}, {"callbacks": [callback]})
    assert callback.reports == []
    strict = AgentDebugCallback(dbg, success_check=lambda s: "E-311 was paid one weekend shift")
    _payroll(localize).invoke({}, {"callbacks": [strict]})
    (report,) = strict.reports
    assert "time_zone_relabelled" not in {f.rule_id for f in report.findings}
    # (nodes that wrote keys of their own, or nothing, lost nothing of the state)
    assert "memory.context_loss" not in report.failure_modes


SHEET = {"employee_id": "EMP-204", "regular_hours": 80.0, "overtime_hours": 6.5, "rate": 31.2}


@tool
def get_timesheet(employee_id: str) -> str:
    """The approved timesheet of an employee for the period."""
    return json.dumps(SHEET)


@tool
def compute_gross_pay(
    employee_id: str, regular_hours: float, overtime_hours: float, rate: float
) -> str:
    """Gross pay: regular hours at the rate, overtime at 1.5 times it."""
    gross = round(regular_hours * rate + overtime_hours * rate * 1.5, 2)
    return json.dumps({"employee_id": employee_id, "gross_pay": gross})


def test_a_model_that_passed_other_hours_than_its_timesheet_said_is_blamed(
    dbg: AgentDebug,
) -> None:
    """The timesheet (a ToolNode's JSON text) says 6.5 overtime hours; the model
    passes 0; the pay tool computes right on that and the check names its result."""
    args = {"employee_id": "EMP-204", "regular_hours": 80.0, "overtime_hours": 0.0}
    model = scripted([
        call("get_timesheet", {"employee_id": "EMP-204"}, "c1"),
        call("compute_gross_pay", {**args, "rate": 31.2}, "c2"),
        AIMessage(content="Dana Ortiz's paycheck is $2,496.00."),
    ])  # fmt: skip

    def paid(state: dict[str, Any]) -> bool | str:
        said = state["messages"][-1].content
        return (
            "2,800.20" in said or "Dana's paycheck came to $2,496.00; her timesheet says $2,800.20"
        )

    callback = AgentDebugCallback(dbg, success_check=paid)
    graph = agent_loop(model, ToolNode([get_timesheet, compute_gross_pay]))
    graph.invoke({"messages": [HumanMessage("Pay EMP-204.")]}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 3)
    assert root.mode_id == "memory.context_loss"
    assert report.fix is not None and report.fix.directive == (
        "At step 3, agent: call compute_gross_pay with overtime_hours=6.5, the value the "
        "step was given, not 0.0."
    )


@tool
def query_error_rates(window_min: int) -> str:
    """5xx error rates of every service over the window, as fractions."""
    return json.dumps({"services": [
        {"service": "checkout", "error_rate": 0.042},
        {"service": "payments", "error_rate": 0.027},
    ]})  # fmt: skip


@tool
def open_incident(service: str, summary: str) -> str:
    """Open an incident and page the service's on-call."""
    OPENED.append(service)
    return json.dumps({"incident_id": f"INC-{len(OPENED)}", "service": service})


OPENED: list[str] = []


def test_a_model_that_read_a_fraction_as_a_percentage_is_blamed(dbg: AgentDebug) -> None:
    OPENED.clear()
    model = scripted([
        call("query_error_rates", {"window_min": 60}, "q1"),
        AIMessage(
            content="checkout is at 4.2%, over 2%. payments is at 0.27%, under it.",
            tool_calls=[{"name": "open_incident", "id": "i1",
                         "args": {"service": "checkout", "summary": "5xx at 4.2%"}}],
        ),
        AIMessage(content="Sweep done: one incident, for checkout."),
    ])  # fmt: skip

    def paged(state: dict[str, Any]) -> bool | str:
        return "payments" in OPENED or "payments failed 2.7% of requests and nobody was paged"

    callback = AgentDebugCallback(dbg, success_check=paged)
    graph = agent_loop(model, ToolNode([query_error_rates, open_incident]))
    ask = "Hourly sweep: open an incident for every service over 2% 5xx."
    graph.invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 3)
    assert root.mode_id == "observation.output_misread"
    assert report.fix is not None and report.fix.directive == (
        "At step 3, agent: it wrote 0.27 where the figure is 2.7%; read the figure again, "
        "with its decimal point (a fraction is not a percentage)."
    )


@tool
def run_dq_suite(table: str) -> str:
    """Run the data-quality suite on a table."""
    CHECKED.append(table)
    return json.dumps({"table": table, "passed": True})


CHECKED: list[str] = []


def test_a_model_that_cleared_a_publish_after_two_of_three_tables_is_blamed(
    dbg: AgentDebug,
) -> None:
    CHECKED.clear()
    model = scripted([
        call("run_dq_suite", {"table": "customers"}, "d1"),
        call("run_dq_suite", {"table": "payments"}, "d2"),
        AIMessage(content="All checks passed: revenue-daily is cleared to publish."),
        AIMessage(content="unused"),
    ])  # fmt: skip

    def checked(state: dict[str, Any]) -> bool | str:
        return "orders" in CHECKED or (
            "finance found 1,212 orders with no customer_id; the sign-off lists customers, payments"
        )

    callback = AgentDebugCallback(dbg, success_check=checked)
    graph = agent_loop(model, ToolNode([run_dq_suite]))
    ask = "Before we publish revenue-daily, run the DQ suite on orders, customers and payments."
    graph.invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 5)
    assert root.mode_id == "verification.premature_success"
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 5, agent: call run_dq_suite for 'orders' too (the request listed it)"
    )


@tool
def reset_password(user: str) -> str:
    """Reset a user's password."""
    return json.dumps({"user": user, "status": "reset"})


@tool
def revoke_sessions(user: str) -> str:
    """Sign a user out of every active session."""
    REVOKED.append(user)
    return json.dumps({"user": user, "revoked": 2})


REVOKED: list[str] = []


def test_a_model_that_closed_a_ticket_without_an_action_it_was_asked_for_is_blamed(
    dbg: AgentDebug,
) -> None:
    """The run records the tools the ToolNode runs, so the one never called is known."""
    REVOKED.clear()
    model = scripted([
        call("reset_password", {"user": "jlee"}, "r1"),
        AIMessage(content="Jordan's password is reset; the ticket can be closed."),
    ])  # fmt: skip

    def signed_out(state: dict[str, Any]) -> bool | str:
        return "jlee" in REVOKED or "his account still has 2 live sign-ins from the stolen laptop"

    callback = AgentDebugCallback(dbg, success_check=signed_out)
    graph = agent_loop(model, ToolNode([reset_password, revoke_sessions]))
    ask = "Jordan's laptop was stolen: reset his password and revoke all of his active sessions."
    graph.invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    run = callback.trajectory()
    assert {a.name: a.tools for a in run.agents} == {
        "agent": [],
        "tools": ["reset_password", "revoke_sessions"],
    }
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 3)
    assert root.mode_id == "verification.premature_success"
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 3, agent: call revoke_sessions (the request asked for it) before answering"
    )


@tool
def get_traveler_profile(employee_id: str) -> str:
    """A traveller's profile: names, documents, preferences."""
    return json.dumps({
        "employee_id": employee_id,
        "preferred_name": "Kate Alvarez",
        "legal_name_on_passport": "Katherine M. Alvarez",
    })  # fmt: skip


@tool
def book_flight(flight: str, passenger_name: str) -> str:
    """Ticket a passenger on a flight."""
    TICKETED.append(passenger_name)
    return json.dumps({"record": "QX7R2M", "flight": flight, "passenger": passenger_name})


TICKETED: list[str] = []


def test_a_model_that_ticketed_the_preferred_name_is_blamed_not_the_checkin(
    dbg: AgentDebug,
) -> None:
    TICKETED.clear()
    model = scripted([
        call("get_traveler_profile", {"employee_id": "E-5521"}, "p1"),
        call("book_flight", {"flight": "UA 1187", "passenger_name": "Kate Alvarez"}, "b1"),
        AIMessage(content="Kate is booked on UA 1187 (record QX7R2M)."),
    ])  # fmt: skip

    def boarded(state: dict[str, Any]) -> bool | str:
        return TICKETED == ["Katherine M. Alvarez"] or (
            "Kate Alvarez couldn't board: the name on the ticket doesn't match her passport"
        )

    callback = AgentDebugCallback(dbg, success_check=boarded)
    graph = agent_loop(model, ToolNode([get_traveler_profile, book_flight]))
    ask = "Book Kate Alvarez (E-5521) on UA 1187."
    graph.invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 3)
    assert root.mode_id == "observation.output_misread"
    assert report.fix is not None and "use the record's 'legal_name_on_passport'" in (
        report.fix.directive
    )


def test_the_tools_of_a_tools_node_inside_a_subgraph_are_known_too(dbg: AgentDebug) -> None:
    """The agent loop is a node of an outer graph (``helpdesk``): its tools node's
    tools are recorded under ``helpdesk/tools``, so the action never called is
    found there as well (before: the run listed no tools, and nothing was found)."""
    REVOKED.clear()
    model = scripted([
        call("reset_password", {"user": "jlee"}, "r1"),
        AIMessage(content="Jordan's password is reset; the ticket can be closed."),
    ])  # fmt: skip
    outer = StateGraph(MessagesState)
    outer.add_node("helpdesk", agent_loop(model, ToolNode([reset_password, revoke_sessions])))
    outer.add_edge(START, "helpdesk")

    def signed_out(state: dict[str, Any]) -> bool | str:
        return "jlee" in REVOKED or "his account still has 2 live sign-ins from the stolen laptop"

    callback = AgentDebugCallback(dbg, success_check=signed_out)
    ask = "Jordan's laptop was stolen: reset his password and revoke all of his active sessions."
    outer.compile().invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    run = callback.trajectory()
    assert {a.name: a.tools for a in run.agents} == {
        "helpdesk": [],
        "helpdesk/tools": ["reset_password", "revoke_sessions"],
    }
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and root.agent_name == "helpdesk/agent"
    assert report.fix is not None and "call revoke_sessions (the request asked for it)" in (
        report.fix.directive
    )
