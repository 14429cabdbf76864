"""A tool's figure copied by a model with another unit of its kind ("450 lb" written
as ``"max_load_kg": 450``): blamed on the model call, with the conversion as the fix."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

SPEC = "Model HX-20 hoist. Lift height 6 m. Max rated load: 450 lb. Voltage 230 V."


def hoist(
    wrote: str,
    *,
    spec: str = SPEC,
    question: str = "Can the HX-20 lift my 300 kg engine?",
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    run = traj(
        ev(0, EventType.USER_INPUT, None, input={"question": question}),
        ev(1, EventType.TOOL_CALL, "fetch", input={"model": "HX-20"}),
        ev(2, EventType.TOOL_RESULT, "fetch", output=spec),
        ev(3, EventType.LLM_RESPONSE, "extract", output={"role": "assistant", "content": wrote}),
        ev(4, EventType.LLM_RESPONSE, "report", output={"content": "Yes, it can lift it."}),
        ev(5, EventType.FINAL_ANSWER, "report", output="Yes, it can lift it."),
    )
    return run.model_copy(update={"outcome": Outcome(status=status, reason="wrong load")})


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "unit_swapped"]


def test_a_figure_copied_under_a_key_naming_another_unit_is_blamed_on_its_model_call() -> None:
    run = hoist('{"max_load_kg": 450}')
    (finding,) = found(run)
    assert finding.message == (
        "extract wrote 'max_load_kg: 450' where fetch gave '450 lb' at step 2: the figure "
        "copied, the unit swapped (450 lb is 204.1 kg)"
    )
    report = diagnose(run)
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "extract",
        3,
        "observation.output_misread",
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 3, extract: fetch gave '450 lb', in lb; convert it (450 lb = 204.1 kg) "
        "instead of writing 'max_load_kg: 450'."
    )


@pytest.mark.parametrize(
    ("wrote", "spec", "expected"),
    [
        ("The max load is 450 kg.", SPEC, "'450 kg' where fetch gave '450 lb'"),
        ('{"maxLoadKg": 450}', SPEC, "'maxLoadKg: 450' where fetch gave '450 lb'"),
        ("Range: 120 km.", "Range 120 miles on a charge.", "(120 miles is 193.1 km)"),
        ("It runs at up to 40 °C.", "Rated to 40 °F.", "(40 °f is 4.444 °c)"),
        ("Down to -10 °C.", "Rated down to -10 °F.", "(-10 °f is -23.33 °c)"),
        ("Max load: 450 kg.", "A 450-lb hoist.", "where fetch gave '450-lb'"),
        ("40 degrees Celsius", "Keep under 40 degrees Fahrenheit.", "40 degrees fahrenheit is"),
    ],
)
def test_units_written_after_the_figure_or_named_by_a_key(
    wrote: str, spec: str, expected: str
) -> None:
    (finding,) = found(hoist(wrote, spec=spec))
    assert finding.agent_name == "extract" and expected in finding.message


@pytest.mark.parametrize(
    ("wrote", "spec", "question", "status"),
    [
        # converted, and said in both units
        ("450 lb (204 kg)", SPEC, "Can it lift 300 kg?", OutcomeStatus.FAILURE),
        # a source gives the figure in the model's unit too (the user's 450 kg)
        ("450 kg", SPEC, "Can it lift 450 kg?", OutcomeStatus.FAILURE),
        # another figure, not the tool's
        ("204 kg", SPEC, "Can it lift 300 kg?", OutcomeStatus.FAILURE),
        # another kind of unit ("6 m" of height is not "6 kg")
        ("6 kg", SPEC, "Can it lift 300 kg?", OutcomeStatus.FAILURE),
        # a key's own letters name no unit ("total": "tota" + "l")
        ('{"total": 450}', SPEC, "?", OutcomeStatus.FAILURE),
        # a run that did not fail
        ('{"max_load_kg": 450}', SPEC, "?", OutcomeStatus.SUCCESS),
        # a conversion: the model says the source's figure in its unit too
        ("1 lb is 0.4536 kg, so 1 kg costs $26.46", "$12 per 1 lb bag", "?", OutcomeStatus.FAILURE),
        # 1 kg and 1 lb meet by chance (a doubled recipe's onions, the carrots' pound)
        ("Use 1 kg onions.", "500 g onions, 1 lb carrots", "?", OutcomeStatus.FAILURE),
        # -40 °F is -40 °C
        ("Down to -40 °C.", "Rated down to -40 °F.", "?", OutcomeStatus.FAILURE),
    ],
)
def test_not_a_swapped_unit(wrote: str, spec: str, question: str, status: OutcomeStatus) -> None:
    assert found(hoist(wrote, spec=spec, question=question, status=status)) == []


def test_a_structured_output_s_key_is_read() -> None:
    """The usual structured-output path: the figure is a tool call's argument under a
    key naming its unit (before, the key was lost, and the node that relayed the
    figure was blamed)."""
    run = hoist("")
    call = {"role": "assistant", "content": "", "tool_calls": [{"name": "Spec", "args": {}}]}
    call["tool_calls"][0]["args"] = {"max_load_kg": 450}
    events = [e if e.id != "e3" else e.model_copy(update={"output": call}) for e in run.events]
    (finding,) = found(run.model_copy(update={"events": events}))
    assert finding.agent_name == "extract" and "'max_load_kg:450'" in finding.message


RECEIPT = "HOTEL GRACERY SHINJUKU, Tokyo. 1 night. Total JPY 18,400 (paid by Visa)"


def test_a_currency_named_by_a_sibling_key_is_read() -> None:
    """A receipt in yen extracted as ``{"amount": 18400, "currency": "USD"}``: the
    claim was then converted from dollars and rejected. The currency is what the
    model misread; no rate converts it, so the fix says to keep it (before, the
    node that relayed the rejection was blamed)."""
    wrote = '{"merchant": "Hotel Gracery", "amount": 18400, "currency": "USD"}'
    run = hoist(wrote, spec=RECEIPT)
    (finding,) = found(run)
    assert finding.message == (
        "extract wrote 'amount: 18400, currency: USD' where fetch gave 'JPY 18,400' at "
        "step 2: the figure copied, the currency swapped (18400 JPY is not 18400 USD)"
    )
    assert finding.evidence[1].quote == '"currency": "USD"'
    report = diagnose(run)
    assert report.root_cause is not None and report.root_cause.step_index == 3
    assert all(e.grounded for e in report.root_cause.evidence)
    assert report.fix is not None and report.fix.directive == (
        "At step 3, extract: fetch gave 'JPY 18,400', in JPY; keep its currency, or "
        "convert it at the day's rate, instead of writing 'amount: 18400, currency: USD'."
    )


@pytest.mark.parametrize(
    ("wrote", "spec", "expected"),
    [
        (
            '{"weight": 450, "unit": "kg"}',
            SPEC,
            "'weight: 450, unit: kg' where fetch gave '450 lb'",
        ),
        ("It costs 180 EUR.", "Nightly rate: $180.", "(180 USD is not 180 EUR)"),
        ("Total: €180", "Total 180 GBP", "(180 GBP is not 180 EUR)"),
        ('{"price_usd": 18400}', RECEIPT, "'price_usd: 18400' where fetch gave 'JPY 18,400'"),
        ("That is 18,400 USD.", "Invoice total: 18,400 CHF", "(18400 CHF is not 18400 USD)"),
    ],
)
def test_currencies_and_units_a_sibling_key_names(wrote: str, spec: str, expected: str) -> None:
    (finding,) = found(hoist(wrote, spec=spec))
    assert finding.agent_name == "extract" and expected in finding.message


@pytest.mark.parametrize(
    ("wrote", "spec"),
    [
        ('{"amount": 18400, "currency": "JPY"}', RECEIPT),  # the same currency
        ("18400 JPY", "Total ¥18,400"),  # "¥" names no one currency (yen or yuan)
        ("It took 250 USD.", "Give it 250 try."),  # "try" in lower case is a word
        ('{"amount": 18400, "currency": "dollars"}', RECEIPT),  # no code: not read
        ("USD 18,400 (JPY 18,400 at par)", RECEIPT),  # said in the source's too
        # a count or an id beside the currency is no money (a quote converted right)
        (
            '{"nights": 3, "total": 498, "currency": "EUR"}',
            '{"nights": 3, "total": 540, "currency": "USD"}',
        ),
        (
            '{"order_id": 20931, "refund": 121.5, "currency": "USD"}',
            '{"order_id": 20931, "currency": "JPY"}',
        ),
        # two currencies in one object: which figure is in which is not said by a sibling
        (
            '{"base_amount": 100, "base_currency": "USD", "amount": 92.3, "currency": "EUR"}',
            "100 USD",
        ),
        ("The room is $180 CAD per night.", "Rate: 180 CAD/night"),  # "$" with its code after
        ('{"qty": 450, "unit": "pcs"}', SPEC),  # no unit of a kind
    ],
)
def test_not_a_swapped_currency(wrote: str, spec: str) -> None:
    assert found(hoist(wrote, spec=spec)) == []


@pytest.mark.parametrize(
    "wrote",
    [
        'Here it is:\n```json\n{"amount": 18400, "currency": "USD"}\n```',  # a fence
        '{"amount": "18,400.00", "currency": "USD"}',  # an amount as text
        '{"amount": 18400, "currencyCode": "USD"}',
    ],
)
def test_a_replys_json_is_read_in_a_fence_and_with_amounts_as_text(wrote: str) -> None:
    (finding,) = found(hoist(wrote, spec=RECEIPT))
    assert "(18400 JPY is not 18400 USD)" in finding.message


def test_a_source_s_sibling_currency_is_quoted_as_its_json_holds_it() -> None:
    """A source given as JSON text: the evidence quotes what is there, not the
    message's rendering of it; a dict's values read one a line are not one figure."""
    run = hoist('{"amount": 18400, "currency": "USD"}', spec='{"total": 18400, "currency": "JPY"}')
    report = diagnose(run)
    root = report.root_cause
    assert root is not None and [e.quote for e in root.evidence] == [
        '"currency": "JPY"',
        '"currency": "USD"',
    ]
    assert all(e.grounded for e in root.evidence)
    lines = hoist("It is 18400 USD.", spec={"total": 18400, "note": "JPY"})  # type: ignore[arg-type]
    assert found(lines) == []


def test_figures_are_read_around_numbers_only_with_their_whole_context() -> None:
    """The figure patterns run only near a text's numbers: a figure at the text's
    start, a unit after a long gap of prose, and a key whose name is long still read
    as they would in the whole text."""
    from agentdebug.detect.units import _figures

    key = "_".join(["part"] * 6) + "_kg"  # (a key of 32 characters before its value)
    text = f'450 lb {"prose " * 40} {{"{key}": 12, "price_usd": 180}} and -10 °F, JPY 18,400'
    found = [(f.value, f.unit) for f in _figures(text)]
    assert found == [(450.0, "lb"), (-10.0, "°f"), (12.0, "kg"), (18400.0, "jpy"), (180.0, "usd")]
