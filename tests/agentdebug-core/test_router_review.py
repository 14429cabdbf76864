"""What a model adds to the free tier, and what it must not take away (a user review
of the model-backed path): a model that agrees but leaves its fix empty keeps the
concrete fix; a model's shrug (confidence 0) or a step-by-step reading that found no
step decisive neither outranks the free tier's candidate nor counts as agreement;
lifecycle with nothing that survived grounding gives the free tier's candidate,
saying so. Through the real openai client, over HTTP, to a scripted local server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.llm import Budget, LLMSettings
from agentdebug.llm.testing import Reply, ScriptedServer
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)
from conftest import EXAMPLES, ev, node, traj


def settings_for(server: ScriptedServer, **kw: Any) -> LLMSettings:
    return LLMSettings(
        model="scripted", base_url=server.base_url, api_key="k", cache=False, max_retries=0, **kw
    )


def schema_name(request: dict[str, Any]) -> str:
    return str(request["response_format"]["json_schema"]["name"])


def attribution(
    agent: str,
    step: int,
    confidence: float,
    *,
    mode: str | None = None,
    fix: str = "",
    reason: str = "the model's reason",
) -> str:
    return json.dumps(
        {
            "agent": agent,
            "step": step,
            "failure_mode": mode,
            "reason": reason,
            "evidence": [],
            "fix": fix,
            "confidence": confidence,
        }
    )


def verdict(probability: float, reason: str = "nothing wrong here") -> str:
    return json.dumps(
        {
            "decisive": False,
            "error_probability": probability,
            "failure_mode": None,
            "reason": reason,
            "evidence": "",
            "fix": "",
        }
    )


# -- runs ------------------------------------------------------------------------------------

ERROR = "unknown city 'Pariss'; known: ['Berlin', 'Paris']"
MADE_UP = "It is sunny and 25C in Paris today, enjoy!"


def weather() -> AgentTrajectory:
    """A LangGraph ToolNode loop as the callback records it: the model asks for
    get_weather("Pariss"), the tool fails, the model makes up a forecast."""
    question = {"role": "user", "content": "What's the weather in Paris right now?"}
    call = {"id": "c1", "name": "get_weather", "args": {"city": "Pariss"}}
    asked = {"role": "assistant", "content": "", "tool_calls": [call]}
    failed = {"role": "tool", "name": "get_weather", "tool_call_id": "c1", "content": ERROR}

    def event(id_: str, type_: EventType, step: int, agent: str | None, **kw: Any) -> AgentEvent:
        return AgentEvent(id=id_, type=type_, step_index=step, agent_name=agent, **kw)

    return AgentTrajectory(
        id="weather",
        framework="langgraph",
        goal="What's the weather in Paris right now?",
        events=[
            event("e0", EventType.USER_INPUT, 0, None, input={"messages": [question]}),
            event("s1", EventType.AGENT_START, 1, "agent"),
            event("e2", EventType.LLM_RESPONSE, 1, "agent", input=[question], output=asked),
            event("e3", EventType.AGENT_END, 1, "agent", output={"messages": [asked]}),
            event(
                "e5",
                EventType.TOOL_CALL,
                1,
                "agent",
                parent_id="e2",
                input={"city": "Pariss"},
                metadata={"tool_name": "get_weather", "tool_call_id": "c1"},
            ),
            event("s2", EventType.AGENT_START, 2, "tools"),
            event(
                "e6",
                EventType.TOOL_RESULT,
                2,
                "tools",
                parent_id="e5",
                metadata={"tool_name": "get_weather", "tool_call_id": "c1"},
                error=ErrorInfo(type="ValueError", message=ERROR),
            ),
            event("e7", EventType.AGENT_END, 2, "tools", output={"messages": [failed]}),
            event("s3", EventType.AGENT_START, 3, "agent"),
            event(
                "e9",
                EventType.LLM_RESPONSE,
                3,
                "agent",
                input=[question, asked, failed],
                output={"role": "assistant", "content": MADE_UP},
            ),
            event("e11", EventType.FINAL_ANSWER, 3, "agent", output=MADE_UP),
        ],
        outcome=Outcome(
            status=OutcomeStatus.FAILURE,
            reason=f"the answer does not give the tool's temperature: {MADE_UP!r}",
        ),
    )


CODE = "def mean(xs):\n    return sum(xs) / len(xs)"


def pipeline() -> AgentTrajectory:
    """planner -> coder -> tester; the tester raises ZeroDivisionError on the code."""
    plan = {"role": "assistant", "content": "Plan: 1) write mean(xs) 2) test it"}
    code = {"role": "assistant", "content": f"```python\n{CODE}\n```"}
    return AgentTrajectory(
        id="pipeline",
        framework="langgraph",
        goal="Write a function mean(xs) returning the average.",
        events=[
            ev(
                0,
                EventType.USER_INPUT,
                None,
                input={"messages": [{"role": "user", "content": "mean"}]},
            ),
            *node(1, "planner", {"messages": [plan]}),
            AgentEvent(id="s2", type=EventType.AGENT_START, step_index=2, agent_name="coder"),
            AgentEvent(
                id="r2",
                type=EventType.LLM_RESPONSE,
                step_index=2,
                agent_name="coder",
                parent_id="s2",
                input=[plan],
                output=code,
            ),
            AgentEvent(
                id="e2",
                type=EventType.AGENT_END,
                step_index=2,
                agent_name="coder",
                parent_id="s2",
                output={"messages": [code]},
            ),
            AgentEvent(id="s3", type=EventType.AGENT_START, step_index=3, agent_name="tester"),
            AgentEvent(
                id="x3",
                type=EventType.ERROR,
                step_index=3,
                agent_name="tester",
                parent_id="s3",
                error=ErrorInfo(type="ZeroDivisionError", message="division by zero"),
            ),
        ],
        outcome=Outcome(
            status=OutcomeStatus.FAILURE,
            reason="the graph raised ZeroDivisionError",
            error=ErrorInfo(type="ZeroDivisionError", message="division by zero"),
        ),
    )


INVOICE = "INVOICE HM-2231  Invoice date: 08/03/2025  Payment due: 07/04/2025 (30 days)"


def payables() -> AgentTrajectory:
    """read -> parse (reads 07/04/2025 day for month) -> schedule -> notify: a rule
    blames parse at step 2 with a concrete fix of its own."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"document": INVOICE}),
        ev(1, EventType.AGENT_START, "read"),
        ev(1, EventType.LLM_RESPONSE, "read", input=[{"role": "user", "content": INVOICE}],
           output={"role": "assistant", "content": '{"due_date": "07/04/2025"}'}),
        ev(1, EventType.AGENT_END, "read", output={"raw": {"due_date": "07/04/2025"}}),
        *node(2, "parse", {"invoice": {"due_date": "2025-07-04"}}),
        *node(3, "schedule", {"payment": {"pay_on": "2025-07-02"}}),
        ev(4, EventType.LLM_RESPONSE, "notify",
           output={"role": "assistant", "content": "We will pay on 2 July 2025, before it is due."}),
    )  # fmt: skip
    reason = "HM-2231 was due on 7 April and our notice says we'll pay on 2025-07-02"
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


# -- 1. a model that agrees but leaves its fix empty keeps the concrete one ------------------

FAILED_CALL = 'get_weather({"city":"Pariss"}) failed: "ValueError: ' + ERROR + '"'


@pytest.mark.parametrize("attributor", ["all-at-once", "auto"])
def test_a_model_that_leaves_the_fix_empty_keeps_the_failed_call_in_the_fix(
    attributor: str,
) -> None:
    """The model blames the agent's step 1 (its reply, not the call it asked for) and
    gives no fix, as the prompt allows: the fix still says which call failed and how
    (before: "At step 1, agent: Inspect the error, fix its cause ...", which the free
    tier's own fix had made concrete)."""
    free = diagnose(weather(), settings=LLMSettings())
    assert free.fix is not None and FAILED_CALL in free.fix.directive
    reply = attribution("agent", 1, 0.75, mode="system.tool_error", reason="misspelt city")
    with ScriptedServer([Reply(reply)]) as server:
        report = diagnose(weather(), attributor=attributor, settings=settings_for(server))
    assert [schema_name(r) for r in server.requests] == ["Attribution"]
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 1)
    assert root.strategy.endswith("all-at-once") and root.rationale.startswith("misspelt city")
    assert report.fix is not None
    assert report.fix.directive.startswith(f"At step 1, agent: {FAILED_CALL}. ")


@pytest.mark.parametrize(
    "fix",
    ["", "Be more careful next time."],  # none, and one naming nothing the run holds
)
def test_an_agreeing_model_without_a_fix_of_its_own_keeps_the_rules_fix(fix: str) -> None:
    """A rule blamed parse at step 2 with a fix that names the date and the format;
    the model agrees, with its own reason, and no usable fix: the report's fix is
    the rule's (before: the failure mode's canned remedy)."""
    free = diagnose(payables(), settings=LLMSettings())
    root = free.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert free.fix is not None and "'07/04/2025'" in free.fix.directive
    reply = attribution("parse", 2, 0.8, fix=fix, reason="it swapped day and month")
    with ScriptedServer([Reply(reply)]) as server:
        report = diagnose(payables(), attributor="auto", settings=settings_for(server))
    assert len(server.requests) == 1
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert root.metadata["supported_by"] == ["heuristic", "all-at-once"]
    assert root.rationale == "it swapped day and month"
    assert report.fix is not None and report.fix.directive == free.fix.directive
    # a concrete fix of the model's own is its
    own = "Parse '07/04/2025' as %d/%m/%Y, giving 2025-04-07."
    with ScriptedServer([Reply(attribution("parse", 2, 0.8, fix=own))]) as server:
        report = diagnose(payables(), attributor="auto", settings=settings_for(server))
    assert report.fix is not None and report.fix.directive == own


# -- 2. a shrug, or nothing decisive, is no answer and no agreement ---------------------------


def shrugs(request: dict[str, Any]) -> str:
    """As the shipped dry-run server answers: confidence 0, the first step offered."""
    if schema_name(request) == "StepVerdict":
        return verdict(0.0, "")
    return attribution("planner", 1, 0.0, reason="")


def test_shrugs_do_not_outrank_the_free_tier_on_a_pipeline_that_raised() -> None:
    """all-at-once names planner@1 at confidence 0 and step-by-step judges no step
    decisive (all at 0): neither is an answer, so they do not agree with each other,
    the router goes on (here the budget stops it), and the report keeps the free
    tier's tester@3 and its fix (before: "planner at step 1 - unclassified,
    confidence 0.00 (by auto:all-at-once+step-by-step)", with no fix)."""
    free = diagnose(pipeline(), settings=LLMSettings())
    root = free.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tester", 3)
    assert free.fix is not None
    with ScriptedServer(shrugs) as server:
        report = diagnose(
            pipeline(),
            attributor="auto",
            settings=settings_for(server),
            budget=Budget(max_calls=4),  # all-at-once and three steps; DeepDebug refused
        )
    assert [schema_name(r) for r in server.requests] == ["Attribution"] + ["StepVerdict"] * 3
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tester", 3)
    assert root.confidence == free.root_cause.confidence
    assert root.metadata["supported_by"] == ["heuristic"]
    assert report.fix is not None and report.fix.directive == free.fix.directive
    route = root.metadata["route"]
    assert "all-at-once: planner at step 1 (0.00), confidence under 0.1: not counted" in route
    assert "step-by-step: no answer" in route  # (no step judged at all likely: none named)
    # the shrug is listed below, once
    others = [(h.agent_name, h.step_index) for h in report.hypotheses[1:]]
    assert others.count(("planner", 1)) == 1


def test_shrugs_up_to_deepdebug_do_not_outrank_the_free_tier() -> None:
    """The whole ladder shrugging, DeepDebug included: its global read and its probe
    agreeing at confidence 0 were given 0.15 (0 + the agreement's 0.15), an answer
    that counted and won as the most thorough; two shrugs agreeing are 0."""
    from agentdebug.llm.testing import schema_answerer

    free = diagnose(pipeline(), settings=LLMSettings())
    with ScriptedServer(schema_answerer) as server:
        report = diagnose(pipeline(), attributor="auto", settings=settings_for(server))
    assert "GlobalRead" in [schema_name(r) for r in server.requests]
    root = report.root_cause
    assert root is not None and free.root_cause is not None
    assert (root.agent_name, root.step_index) == (free.root_cause.agent_name, 3)
    assert report.fix is not None and free.fix is not None
    assert report.fix.directive == free.fix.directive
    assert any(
        line.startswith("deepdebug:") and "confidence under 0.1: not counted" in line
        for line in root.metadata["route"]
    )


def test_a_model_agreeing_at_confidence_0_is_no_agreement() -> None:
    """The free tier's searcher@3 with a model "agreeing" at confidence 0: not two
    strategies that agree, so the router does not stop there; the report keeps the
    free tier's reason, not the shrug's (before: stopped, supported by both, the
    rationale the model's)."""
    example = AgentTrajectory.model_validate_json((EXAMPLES / "failed_booking.json").read_text())
    free = diagnose(example, settings=LLMSettings()).root_cause
    assert free is not None and (free.agent_name, free.step_index) == ("searcher", 3)

    def script(request: dict[str, Any]) -> str:
        if schema_name(request) == "Attribution":
            return attribution("searcher", 3, 0.0, reason="dunno")
        return verdict(0.1)

    with ScriptedServer(script) as server:
        report = diagnose(
            example, attributor="auto", settings=settings_for(server), budget=Budget(max_calls=3)
        )
    assert len(server.requests) == 3  # it went on to step-by-step
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("searcher", 3)
    assert root.metadata["supported_by"] == ["heuristic"]
    assert root.confidence == free.confidence and root.rationale == free.rationale


def test_a_step_by_step_reading_with_nothing_decisive_does_not_agree() -> None:
    """all-at-once names writer@4 at 0.4; step-by-step judges no step decisive, the
    writer's the likeliest at 0.3: that is no second opinion (before: writer@4 at
    0.58, "agreed" by both, and the router stopped)."""
    run = traj(
        ev(
            0, EventType.USER_INPUT, None, input="Write a one-line market note: Q3 revenue of ACME."
        ),
        ev(1, EventType.MESSAGE, "supervisor", output="route: researcher"),
        ev(2, EventType.MESSAGE, "researcher", output="ACME Q3 revenue: 4.2M USD"),
        ev(3, EventType.MESSAGE, "supervisor", output="route: writer"),
        ev(4, EventType.FINAL_ANSWER, "writer", output="ACME's Q3 revenue was 4.2M USD."),
    ).model_copy(
        update={
            "outcome": Outcome(
                status=OutcomeStatus.FAILURE,
                reason="the market note gives the wrong Q3 revenue (10-Q says 2.4M USD)",
            )
        }
    )

    def script(request: dict[str, Any]) -> str:
        if schema_name(request) == "Attribution":
            return attribution("writer", 4, 0.4, reason="the writer gave the wrong figure")
        text = "\n".join(str(m["content"]) for m in request["messages"])
        writer = "is step 4 (by" in text
        return verdict(0.3 if writer else 0.1, "The writer repeated what the researcher said")

    with ScriptedServer(script) as server:
        report = diagnose(
            run, attributor="auto", settings=settings_for(server), budget=Budget(max_calls=5)
        )
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("writer", 4)
    assert root.metadata["supported_by"] == ["all-at-once"]
    assert root.confidence == 0.4
    assert any(
        line.startswith("step-by-step: writer at step 4") and "nothing decisive" in line
        for line in root.metadata["route"]
    )


# -- 3. lifecycle that names nothing gives the free tier's candidate --------------------------


def test_lifecycle_with_nothing_grounded_gives_the_free_tiers_candidate_and_says_so() -> None:
    """Before: "Root cause: none named (no error instance survived grounding; no
    answer)", and the free tier's tester@3 and its fix were lost."""
    free = diagnose(pipeline(), settings=LLMSettings())
    with ScriptedServer(lambda r: json.dumps({"triggers": [], "updates": []})) as server:
        report = diagnose(pipeline(), attributor="lifecycle", settings=settings_for(server))
    assert server.requests
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("tester", 3)
    assert root.strategy == "heuristic"
    assert report.fix is not None and free.fix is not None
    assert report.fix.directive == free.fix.directive
    assert (
        "attributor 'lifecycle' named no root cause (no error instance survived grounding); "
        "the heuristic attributor's answer is used instead"
    ) in report.notes
    # with no fallback (as the benchmarks score a strategy), none is named
    with ScriptedServer(lambda r: json.dumps({"triggers": [], "updates": []})) as server:
        strict = diagnose(
            pipeline(), attributor="lifecycle", settings=settings_for(server), no_fallback=True
        )
    assert strict.root_cause is None


def test_a_search_the_budget_stopped_midway_does_not_outrank_a_whole_answer() -> None:
    """A 24-step run: all-at-once names a1 at step 5 (0.6, under the router's bar),
    binary search gets one verdict before the budget stops it and names a step of
    the half left, partial. The more thorough rung decides only when it finished:
    its partial answer ranks below the whole one (before, being asked later, it won
    at 0.08 over the model's 0.6)."""
    events = [
        AgentEvent(
            id=f"e{i}",
            type=EventType.MESSAGE,
            step_index=i,
            agent_name=f"a{i % 2}",
            output=f"step {i}: checked the ledger rows for batch {i}",
        )
        for i in range(24)
    ]
    run = AgentTrajectory(
        id="ledger",
        goal="Reconcile the ledger.",
        events=events,
        outcome=Outcome(status=OutcomeStatus.FAILURE, reason="the ledger does not balance"),
    )
    whole = {
        "agent": "a1",
        "step": 5,
        "failure_mode": None,
        "reason": "a1 skipped batch 5's rows.",
        "evidence": [{"step": 5, "text": "checked the ledger rows for batch 5"}],
        "fix": "",
        "confidence": 0.6,
    }
    verdict = {
        "half": "second",
        "reason": "The later half holds it.",
        "evidence": "checked the ledger rows for batch 17",
        "evidence_step": 17,
        "confidence": 0.9,
    }

    def answer(request: dict[str, Any]) -> str:
        return json.dumps(whole if schema_name(request) == "Attribution" else verdict)

    with ScriptedServer(answer) as server:
        report = diagnose(
            run, attributor="auto", settings=settings_for(server), budget=Budget(max_calls=2)
        )
    assert [schema_name(r) for r in server.requests] == ["Attribution", "HalfVerdict"]
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("a1", 5)
    partial = next(h for h in report.hypotheses if h.metadata.get("partial"))
    assert partial.strategy == "auto:binary-search" and partial.step_index >= 12


def test_a_model_agreeing_at_a_near_zero_confidence_is_no_agreement_either() -> None:
    """A review: at 0.004 the router went on; at 0.01 it took the model's shrug as
    agreement, stopped, and gave its "not sure at all" as the reason."""
    free = diagnose(weather(), settings=LLMSettings())
    assert free.root_cause is not None
    root = free.root_cause
    shrug = attribution(
        root.agent_name or "", root.step_index or 0, 0.01, reason="Not sure at all."
    )
    with ScriptedServer(lambda r: shrug if schema_name(r) == "Attribution" else verdict(0.0)) as s:
        report = diagnose(weather(), attributor="auto", settings=settings_for(s))
    assert len(s.requests) > 1  # (no agreement: it went on)
    got = report.root_cause
    assert got is not None and got.rationale == root.rationale
    assert "confidence under 0.1: not counted" in " ".join(got.metadata["route"])
