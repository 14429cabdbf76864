"""A step that read a slashed date day for month ("07/04/2025" as 4 July) is blamed,
not the steps that used the date faithfully."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

INVOICE = "INVOICE HM-2231  Invoice date: 08/03/2025  Payment due: 07/04/2025 (30 days)"
REASON = "HM-2231 was due on 7 April and our notice says we'll pay on 2025-07-02"


def payables(
    parsed: str = "2025-07-04", reason: str = REASON, text: str = INVOICE
) -> AgentTrajectory:
    """read (a model copies the fields) -> parse (code) -> schedule (code) -> notify (a model)."""
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"document": text}),
        ev(1, EventType.AGENT_START, "read"),
        ev(1, EventType.LLM_RESPONSE, "read", input=[{"role": "user", "content": text}],
           output={"role": "assistant", "content": '{"due_date": "07/04/2025"}'}),
        ev(1, EventType.AGENT_END, "read", output={"raw": {"due_date": "07/04/2025"}}),
        *node(2, "parse", {"invoice": {"due_date": parsed}}),
        *node(3, "schedule", {"payment": {"pay_on": "2025-07-02"}}),
        ev(4, EventType.LLM_RESPONSE, "notify",
           output={"role": "assistant", "content": "We will pay on 2 July 2025, before it is due."}),
    )  # fmt: skip
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE, reason=reason)})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "day_month_swapped"]


def test_the_step_that_read_the_day_as_the_month_is_blamed() -> None:
    run = payables()
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("parse", 2)
    assert finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "'07/04/2025', held at step 0, reads as 2025-04-07 or as 2025-07-04; the failure "
        "names 2025-04-07, and parse at step 2 wrote 2025-07-04: it read the day as the month"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("parse", 2)
    assert report.fix is not None and report.fix.directive == (
        "At step 2, parse: it read '07/04/2025' as 2025-07-04, month and day the other way "
        "round from 2025-04-07, the date the run wanted; parse it in the order the source "
        "writes dates (its locale: %d/%m/%Y for day first, %m/%d/%Y for month first)."
    )


def test_a_model_that_wrote_the_date_in_words_the_wrong_way_is_blamed() -> None:
    run = payables(reason="the guest wants April 7th, 2025; we booked July")
    run.events[2] = run.events[2].model_copy(
        update={"output": {"role": "assistant", "content": "Due 4 July 2025."}}
    )
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index, finding.mode_id) == (
        "read", 1, "observation.output_misread",
    )  # fmt: skip


def test_a_month_first_date_read_day_first_is_found_the_other_way_too() -> None:
    text = "Order placed 04/07/2025 (US)"
    run = payables(text=text, reason="the order was placed on April 7, 2025, not 4 July")
    run.events[2] = run.events[2].model_copy(
        update={"input": [{"role": "user", "content": text}], "output": {"content": "{}"}}
    )
    run.events[3] = run.events[3].model_copy(update={"output": {"raw": {}}})
    (finding,) = found(run)
    assert (finding.agent_name, finding.metadata["value"]) == ("parse", "2025-07-04")


def test_a_right_read_a_date_that_reads_one_way_or_an_unnamed_date_is_left_alone() -> None:
    assert found(payables(parsed="2025-04-07")) == []  # (read day first, as the failure wants)
    # the failure names only the date the run wrote: nothing says it was the other one
    assert found(payables(reason="we paid HM-2231 on 2025-07-04 twice")) == []
    # 13/04/2025 reads one way only
    text = INVOICE.replace("07/04/2025", "13/04/2025")
    assert found(payables(text=text, parsed="2025-04-13", reason="due on 13 April")) == []
    # "may" the verb is not a month
    assert found(payables(reason="the notice may 7 times say 4")) == []
    ok = payables().model_copy(update={"outcome": Outcome(status=OutcomeStatus.SUCCESS)})
    assert found(ok) == []


def test_a_date_the_run_wrote_before_the_slashed_one_is_not_read_from_it() -> None:
    # the user gave the cut-off 2025-07-04 before the invoice came from a tool: the
    # step that wrote that date may have it from the user, not from the invoice
    run = payables()
    run.events[0] = ev(0, EventType.USER_INPUT, None, input={"note": "cut-off 2025-07-04"})
    run.events.insert(1, ev(0, EventType.TOOL_RESULT, "fetch", output=INVOICE))
    assert found(run) == []


# -- faults a review found: each a test --------------------------------------------


def test_a_run_that_wrote_the_wanted_reading_too_is_left_alone() -> None:
    # a net-30 due date the run computed rightly is the other reading of the invoice date
    run = payables(reason="we paid after 2025-04-07, the due date")
    run.events.append(
        ev(5, EventType.AGENT_END, "terms", output={"net30_due": "2025-04-07"}),
    )
    assert found(run) == []


def test_a_tool_that_parsed_the_date_is_blamed_not_the_model_that_copied_it() -> None:
    run = payables()
    run.events.insert(4, ev(1, EventType.TOOL_RESULT, "extract", output={"due": "2025-07-04"}))
    (finding,) = found(run)
    assert (finding.agent_name, finding.mode_id) == ("extract", "reflection.flawed_reasoning")


def test_other_forms_of_a_date_are_read() -> None:
    # the swapped date as Oracle writes it, the slashed one at a sentence's end, the
    # failure's in lower case
    text = "INVOICE HM-2231. Payment due: 07/04/2025."
    run = payables(parsed="04-JUL-2025", reason="HM-2231 was due on 7 april", text=text)
    assert [f.agent_name for f in found(run)] == ["parse"]
