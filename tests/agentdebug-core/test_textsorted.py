"""A step that sorted records by a number written as text ("9.8" before "10.0"):
blamed at the sort, not at the step that took its top items."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, Outcome, OutcomeStatus
from conftest import node, traj

FINDINGS = [
    {"package": "urllib3", "cve": "CVE-2023-43804", "cvss": "8.1"},
    {"package": "log4j-core", "cve": "CVE-2021-44228", "cvss": "10.0"},
    {"package": "pyyaml", "cve": "CVE-2020-14343", "cvss": "9.8"},
    {"package": "requests", "cve": "CVE-2023-32681", "cvss": "6.1"},
]
REASON = "log4j-core (CVSS 10.0) didn't get a ticket this sprint, while a CVSS 8.1 finding did"


def triage(
    ranked: list[dict[str, Any]],
    *,
    reason: str = REASON,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    """scan (code) -> prioritize (code: the order) -> open_tickets (the top two)."""
    tickets = [{"ticket": f"SEC-{n}", "package": f["package"]} for n, f in enumerate(ranked[:2])]
    return traj(
        *node(1, "scan", {"findings": FINDINGS}),
        *node(2, "prioritize", {"ranked": ranked}),
        *node(3, "open_tickets", {"tickets": tickets}),
    ).model_copy(update={"outcome": Outcome(status=status, reason=reason)})


AS_TEXT = sorted(FINDINGS, key=lambda f: f["cvss"], reverse=True)
AS_NUMBERS = sorted(FINDINGS, key=lambda f: float(f["cvss"]), reverse=True)


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "sorted_as_text"]


def test_scores_sorted_as_text_are_blamed_on_the_sort() -> None:
    run = triage(AS_TEXT)
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("prioritize", 2)
    assert finding.message == (
        "prioritize at step 2 ordered the records by 'cvss' as text ('9.8', '8.1', '6.1', "
        "'10.0'), not as numbers: the record of 'log4j-core' is out of its place"
    )
    report = diagnose(run)
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("prioritize", 2)
    assert report.fix is not None and "sort by 'cvss' as a number" in report.fix.directive
    # (the step that took the top two took them faithfully: not read as a pick)
    assert [f.rule_id for f in report.findings] == ["sorted_as_text"]


def test_numbers_as_numbers_ascending_as_text_are_blamed_too() -> None:
    bids = [{"vendor": v, "price": p} for v, p in (("Bolt", 95), ("Acme", 120), ("Crux", 101))]
    ranked = sorted(bids, key=lambda b: str(b["price"]))
    run = traj(*node(1, "load", {"bids": bids}), *node(2, "rank", {"bids": ranked})).model_copy(
        update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason="Bolt at 95 was cheapest")}
    )
    (finding,) = found(run)
    assert finding.agent_name == "rank"


@pytest.mark.parametrize(
    "run",
    [
        triage(AS_NUMBERS),  # sorted right
        triage(FINDINGS),  # not sorted at all
        triage(AS_TEXT, status=OutcomeStatus.SUCCESS),
        triage(AS_TEXT, reason="the sprint board was late"),  # names no record moved
        # a list the step made itself (no record came from before)
        triage([{**f, "rank": n} for n, f in enumerate(AS_TEXT)]),
    ],
)
def test_not_sorted_as_text(run: AgentTrajectory) -> None:
    assert found(run) == []


def test_prices_sorted_right_the_other_way_are_no_text_sort() -> None:
    """Cheapest first, 8.5, 45, 120, is descending as text too: sorted as numbers, it
    is not this fault, and the pick after it stays blamed (a review found it read as
    a text sort that hid the pick)."""
    quotes = [
        {"vendor": v, "price": p} for v, p in (("Acme", "120"), ("Bolt", "45"), ("Crux", "8.5"))
    ]
    ranked = sorted(quotes, key=lambda q: float(q["price"]))
    run = traj(
        *node(1, "fetch", {"quotes": quotes}),
        *node(2, "rank", {"ranked": ranked}),
        *node(3, "choose", {"chosen": quotes[0]}),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="ordered from Acme at 120 although Crux quoted 8.5"
    )})  # fmt: skip
    assert found(run) == []
    assert [f.agent_name for f in RulePack().detect(run) if f.rule_id == "wrong_record_picked"] == [
        "choose"
    ]


def test_a_step_that_kept_the_order_it_was_given_did_not_sort() -> None:
    """A filter that passed the scanner's list on in its order (which happens to sort
    the scores as text) is not the sort."""
    run = triage(AS_TEXT)
    events = [
        *node(1, "scan", {"findings": AS_TEXT}),
        *node(2, "drop_suppressed", {"ranked": AS_TEXT}),
        *run.events[4:],
    ]
    assert found(run.model_copy(update={"events": events})) == []


def test_an_order_by_another_field_is_no_text_sort() -> None:
    """Vendors sorted by name leave their prices 10, 85, 9, which read as text-sorted:
    the step sorted by name (a review found it blamed as a text sort)."""
    quotes = [{"vendor": v, "price": p} for v, p in (("Crux", 9), ("Acme", 10), ("Bolt", 85))]
    by_name = sorted(quotes, key=lambda q: q["vendor"])
    run = traj(
        *node(1, "fetch", {"quotes": quotes}),
        *node(2, "sort_by_vendor", {"quotes": by_name}),
        *node(3, "pick", {"chosen": by_name[0]}),
    ).model_copy(update={"outcome": Outcome(
        status=OutcomeStatus.FAILURE, reason="ordered from Acme at 10 although Crux quoted 9"
    )})  # fmt: skip
    assert found(run) == []


def test_a_huge_integer_in_a_payload_is_read_not_raised() -> None:
    """An int past Python's 4,300-digit limit for ``str`` (a review found the text
    reading every rule shares raise on it)."""
    from agentdebug.text import compact_json, flatten

    assert flatten({"n": 10**5000}) == "<int of 16610 bits>"
    assert compact_json({"n": 10**5000}) == "<int of 16610 bits>"
    run = triage(AS_TEXT)
    huge = run.events[0].model_copy(update={"output": {"findings": FINDINGS, "n": 10**5000}})
    assert [
        f.rule_id
        for f in diagnose(run.model_copy(update={"events": [huge, *run.events[1:]]})).findings
    ]
