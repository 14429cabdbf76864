"""A step that fetched a namesake's record (X20's manual for an X200) is blamed, not
the answer that quoted it faithfully."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

X20 = {"doc_id": "man-x20", "title": "X20 Push Mower manual", "text": "Torque to 18 N·m."}
REASON = "the bot told an X200 owner to torque the blade bolt to 18 N·m"


def support(doc: Any = X20, *, reason: str = REASON, asked: str = "X200") -> AgentTrajectory:
    """rewrite (a model) -> retrieve (a lookup) -> answer (a model)."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"question": f"My {asked}: blade torque?"}),
        ev(1, EventType.LLM_RESPONSE, "rewrite", output={"content": f'{{"model": "{asked}"}}'}),
        *node(1, "rewrite", {"query": {"model": asked}}),
        *node(2, "retrieve", {"doc": doc}),
        ev(3, EventType.LLM_RESPONSE, "answer",
           output={"role": "assistant", "content": f"For your {asked}, torque to 18 N·m."}),
    )  # fmt: skip
    outcome = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    return run.model_copy(update={"outcome": outcome})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "namesake_fetched"]


def test_the_lookup_that_returned_a_namesake_s_record_is_blamed() -> None:
    run = support()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("retrieve", 2)
    assert finding.mode_id == "observation.poor_retrieval"
    assert finding.message == (
        "'X200', which the failure names, was in the run before step 2, and its update there "
        "holds 'X20', its only identifier of the kind, not 'X200': it fetched a namesake's "
        "record, and no step after it fetched the right one"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("retrieve", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, retrieve: it returned the record of 'X20' for 'X200'; match the "
        "identifier exactly (a lookup by prefix, or a number cut short, finds 'X20' first)."
    )


def test_a_longer_namesake_or_one_with_a_dash_is_found_too() -> None:
    x2000 = {"title": "X2000 Zero-Turn manual", "text": "Torque to 102 N·m."}
    assert [f.agent_name for f in found(support(x2000))] == ["retrieve"]
    sku = {"sku": "SKU-104", "name": "Desk lamp"}
    run = support(sku, asked="SKU-1042", reason="the customer ordered SKU-1042 and got a lamp")
    assert [f.metadata["value"] for f in found(run)] == ["SKU-104"]


def test_the_right_record_another_model_or_an_unasked_id_is_left_alone() -> None:
    both = {"title": "X200 manual", "text": "Unlike the X20, torque to 45 N·m."}
    assert found(support(both)) == []
    assert found(support({"title": "X300 manual", "text": "18 N·m."})) == []
    # the named id first appears in the step's own output: nothing asked for it
    run = support(reason="the bot quoted the X20 manual for the X200, which nobody asked about")
    run.events[0] = ev(0, EventType.USER_INPUT, None, input={"question": "blade torque?"})
    run.events[1] = ev(1, EventType.LLM_RESPONSE, "rewrite", output={"content": "{}"})
    run.events[3] = run.events[3].model_copy(update={"output": {"query": {}}})
    run.events[-1] = run.events[-1].model_copy(update={"output": {"content": "18 N·m."}})
    assert found(run) == []
    ok = support().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


# -- faults a review found: each a test --------------------------------------------


def test_the_right_record_written_another_way_is_the_right_record() -> None:
    for written in ("X-200", "X 200", "x200"):
        doc = [{"model": "X20", "text": "18 N·m"}, {"model": written, "text": "45 N·m"}]
        assert found(support(doc)) == [], written


def test_a_right_fetch_after_the_wrong_one_or_a_list_of_many_ids_is_no_namesake() -> None:
    run = support()
    run.events.insert(6, ev(2, EventType.TOOL_RESULT, "retrieve", output={"title": "X200 manual"}))
    assert found(run) == []
    years = {"FY20": 1.2, "FY21": 1.4, "FY22": 1.5}
    fy = support(years, asked="FY2026", reason="the FY2026 forecast was wrong")
    assert found(fy) == []
    page = {"invoices": [f"INV-{n}" for n in range(10, 60)], "next": "page=2"}
    inv = support(page, asked="INV-1042", reason="the agent said INV-1042 does not exist")
    assert found(inv) == []


def test_case_and_separators_do_not_hide_a_namesake() -> None:
    run = support(asked="x200")  # (the user wrote it lower case; the failure does not)
    assert [f.metadata["value"] for f in found(run)] == ["X20"]
    sku = support({"sku": "SKU104"}, asked="SKU-1042", reason="ordered SKU-1042, got a lamp")
    assert [f.metadata["value"] for f in found(sku)] == ["SKU104"]


def test_a_tool_s_result_is_named_by_its_tool() -> None:
    run = support()
    result = ev(2, EventType.TOOL_RESULT, None, output=X20, metadata={"tool_name": "get_manual"})
    run.events[4:6] = [result]
    (finding,) = found(run)
    assert finding.metadata["fix"].startswith("At step 2, get_manual: it returned the record")
