"""An amount kept in cents that a step wrote out as whole currency is blamed on that
step, not on the step that loaded the amount (rightly, in cents)."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

ACCOUNT = {"id": "acc_3391", "plan": "Business", "price_cents": 129900, "currency": "USD"}
REASON = "Customer replied: 'Is this a typo?? $129,900.00 a year?'"


def renewal(price: str = "$129,900.00", *, reason: str = REASON, model: bool = False,
            account: Any = None) -> AgentTrajectory:  # fmt: skip
    """load_account -> draft (a model's template) -> render (code, or a model)."""
    body = f"Your Business plan renews at {price}/yr."
    render = (
        [ev(3, EventType.LLM_RESPONSE, "render", output={"role": "assistant", "content": body})]
        if model
        else node(3, "render", {"email": {"body": body}})
    )
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"account_id": "acc_3391"}),
        *node(1, "load_account", {"account": account or ACCOUNT}),
        ev(2, EventType.LLM_RESPONSE, "draft", output={"content": "renews at {price}/yr"}),
        *render,
    )
    outcome = Outcome(status=OutcomeStatus.FAILURE, reason=reason)
    return run.model_copy(update={"outcome": outcome})


def by(run: AgentTrajectory, rule: str) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == rule]


def test_cents_rendered_as_dollars_are_blamed_on_the_render_step() -> None:
    run = renewal()
    (finding,) = by(run, "minor_units_as_major")
    assert (finding.agent_name, finding.step_index) == ("render", 3)
    assert finding.mode_id == "reflection.flawed_reasoning"
    assert finding.message == (
        "'$129,900.00', which the failure names, is 'price_cents' = 129900 as load_account "
        "gave it at step 1, an amount in minor units (1,299.00); its code wrote it as whole "
        "currency at step 3"
    )
    assert by(run, "value_made_in_code") == []  # (load_account's 129900 is right, in cents)
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("render", 3)
    assert report.fix is not None and report.fix.directive == (
        "At step 3, render: 'price_cents' is in minor units (cents); divide by 100 before "
        "writing it as currency (1,299.00, not $129,900.00)."
    )


def test_a_model_that_wrote_cents_as_dollars_misread_them() -> None:
    (finding,) = by(renewal(model=True), "minor_units_as_major")
    assert finding.mode_id == "observation.output_misread" and finding.agent_name == "render"
    coded = renewal("129900.00 USD", reason="the notice says 129,900.00 USD a year")
    assert [f.agent_name for f in by(coded, "minor_units_as_major")] == ["render"]


def test_other_keys_and_figures_are_left_alone() -> None:
    # the same figure under a key in whole currency: no cents were misread
    dollars = renewal(account={**ACCOUNT, "price": 129900, "price_cents": 1})
    assert by(dollars, "minor_units_as_major") == []
    # the figure written without a currency, or wanted rather than wrong
    assert by(renewal("129,900.00 points"), "minor_units_as_major") == []
    wanted = renewal(reason="the notice should say $129,900.00")
    assert by(wanted, "minor_units_as_major") == []
    # a figure with cents of its own is not a whole number of cents
    assert by(renewal(reason="the notice says $129,900.50"), "minor_units_as_major") == []
    # a key that only contains "cent" in a longer word
    percent = renewal(account={"id": "acc_3391", "percentage": 129900, "currency": "USD"})
    assert by(percent, "minor_units_as_major") == []


def test_a_record_that_only_carries_the_cents_beside_a_currency_is_not_blamed() -> None:
    # a step echoing {"price_cents": 129900, "currency": "USD"} writes no "129900 USD"
    run = renewal()
    echo = {"account": {**ACCOUNT, "eligible": True}}
    run.events[4:4] = [ev(2, EventType.AGENT_END, "check", output=echo)]
    assert [f.agent_name for f in by(run, "minor_units_as_major")] == ["render"]
