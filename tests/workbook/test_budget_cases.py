"""Budget cases recalculated by LibreOffice.

Missing data reads as the command line words it, never as a spreadsheet error: a device row
without watts shows "no watts" for every energy; no price (blank typed price on a row without one)
shows "no price" for every cost and for the tokens a budget buys. A provider with no price for the
hardware is refused as calc.budget refuses it (the Input check's message: tests/workbook/test_sheet_prices.py).

The deadline block counts the devices that hold the model states as the Results' "Devices needed
to fit" (the job's method, optimizer and ZeRO stage), as inverse.devices_for does for the job;
where the states fit on no count it says so instead of a number.

All copies are recalculated in ONE LibreOffice run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.sheet_cases import recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.functions import pieces
from trainbudget.addin.template import budget_sheet, deadline_block, input_checks, range_basis, ranges_block
from trainbudget.calc.planning import inverse

TPU = "TPU v5e, BF16, dense"  # no watts and no price in the catalog
H100 = "H100 SXM, BF16 tensor core, dense"  # no row price in the catalog
CASES = (
    ({"Device": TPU}, "no watts"),
    ({"Price_per_hour": None}, "no price"),  # blank typed price, the H100 row has none
    ({"Provider": "lambda", "Device": TPU}, "refused"),  # a provider without a TPU price: calc refuses it
    # the reviewer's: LoRA with 8-bit AdamW, ZeRO 0, one device: fits on 1; a 22.5-hour job (LoRA's 4 FLOPs
    # per parameter-token, calc.flops) in 30 days: 1
    ({"Method": "lora", "Optimizer": "adamw_8bit", "ZeRO_stage": 0, "Devices_count": 1}, "lora"),
    ({"Params": 70e9, "ZeRO_stage": 0}, "does not fit"),  # full AdamW 70B unsharded: no count holds it
    ({"Utilization": 0.08}, "outside the band"),  # inside the published runs' band, below the step model's
)
DEADLINE = ("Devices that hold the model states", "Devices for the deadline", "Devices for the deadline, low",
            "Devices for the deadline, expected", "Devices for the deadline, high")
INPUT_KEYS = {v: k for k, v in budget_sheet.NAMES.items()}
ENERGY = ("Energy (kWh)", "Energy, low", "Energy, expected", "Energy, high")
PRICED = ("Cost at 100% on that row (USD)", "Tokens for the budget", "Tokens for the budget, low",
          "Tokens for the budget, expected", "Tokens for the budget, high")


def _rows(ws) -> dict[str, object]:
    return {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1)
            if isinstance(ws[f"A{r}"].value, str)}


@pytest.fixture(scope="module")
def books(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("missing")
    def edit(inputs: dict) -> Callable:
        def apply(wb) -> None:
            for name, value in inputs.items():
                set_named(wb, name, value)
        return apply
    return recalculated_copies(built.path, tmp, [edit(inputs) for inputs, _ in CASES])


def test_the_catalog_lacks_what_the_cases_need():
    table = calc.catalog()
    assert table.get(TPU).watts is None and table.get(TPU).usd_per_device_hour is None
    assert table.get(H100).usd_per_device_hour is None and budget_sheet.INPUTS[3][2] == H100


def test_no_watts_reads_no_watts(books):
    got = _rows(books[0]["Budget"])
    assert all(got[label] == pieces.NO_WATTS for label in ENERGY), {k: got[k] for k in ENERGY}
    assert isinstance(got["Wall-clock hours"], float)  # the rest of the job stands


def test_a_provider_without_a_price_for_the_hardware_is_refused_as_calc_refuses(books):
    got = _rows(books[2]["Budget"])
    with pytest.raises(calc.TrainingBudgetError) as e:
        calc.budget(ranges_block.job(_job_values({"Device": TPU}), calc.catalog(), price="lambda:on_demand"))
    said = "#VALUE! " + str(e.value).split(" (providers with prices for it")[0]
    assert got["Wall-clock hours"] == said and got["Cost at typed utilization (USD)"] == said


@pytest.mark.parametrize("k", [1])
def test_no_price_reads_no_price(books, k):
    got = _rows(books[k]["Budget"])
    cost = next(label for label in got if label.startswith(f"{budget_sheet.TYPED_COST} (") and label.endswith(")"))
    assert got[cost] == pieces.NO_PRICE
    assert all(got[label] == pieces.NO_PRICE for label in PRICED), {k: got[k] for k in PRICED}
    assert not any(isinstance(v, str) and v.startswith("#") for v in got.values()), [
        (label, v) for label, v in got.items() if isinstance(v, str) and v.startswith("#")]



def _job_values(inputs: dict) -> dict:
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    v.update({INPUT_KEYS[name]: value for name, value in inputs.items()})
    return v


def test_deadline_counts_the_jobs_own_memory(books):
    inputs, _ = CASES[3]
    got = _rows(books[3]["Budget"])
    v = _job_values(inputs)
    job = ranges_block.job(v, calc.catalog())
    days = deadline_block.DAYS_DEFAULT
    assert got["Devices needed to fit"] == got["Devices that hold the model states"] == 1
    assert got["Wall-clock hours"] == pytest.approx(float(calc.budget(job).hours), rel=1e-9)
    assert got["Wall-clock hours"] > 20 and got["Devices for the deadline"] == inverse.devices_for(job, days) == 1
    three = inverse.devices_for(job.with_(utilization="prior"), days, case=None)
    assert [got[f"Devices for the deadline, {c}"] for c in ("low", "expected", "high")] == list(three)


def test_deadline_says_when_no_count_holds_the_model(books):
    inputs, _ = CASES[4]
    got = _rows(books[4]["Budget"])
    job = ranges_block.job(_job_values(inputs), calc.catalog())
    assert inverse.devices_for(job, deadline_block.DAYS_DEFAULT) == float("inf")  # calc: never fits
    fit = got["Devices needed to fit"]
    assert isinstance(fit, str) and "does not fit" in fit
    assert got[input_checks.FITS] == fit and all(got[label] == fit for label in DEADLINE), {
        k: got[k] for k in DEADLINE}
    assert isinstance(got["Wall-clock hours"], float)  # the Results stand


def _note(ws, label: str) -> object:
    row = next(c.row for c in ws["A"] if c.value == label)
    return ws[f"C{row}"].value, ws[f"C{row + 1}"].value


def test_hours_say_goodput_is_not_counted_and_flag_a_utilization_outside_the_band(books):
    """The typed utilization is set against the band the ranges use: the step model's for the template's
    job (40% inside it; 8% below it, though inside the published runs' band)."""
    v = _job_values(CASES[1][0])
    p = range_basis.ranged(v, calc.catalog()).prior
    assert range_basis.step_applies(v) and p.low <= v["utilization"] <= p.high
    goodput, band = _note(books[1]["Budget"], "Wall-clock hours")
    assert goodput == pieces.GOODPUT_NOTE
    assert band in (None, "")
    v = _job_values(CASES[5][0])
    p = range_basis.ranged(v, calc.catalog()).prior
    prior = ranges_block.budget(v, calc.catalog(), utilization="prior").prior
    assert not p.low <= v["utilization"] <= p.high and prior.low <= v["utilization"] <= prior.high
    band = _note(books[5]["Budget"], "Wall-clock hours")[1]
    assert band == f"{v['utilization']:.0%} is outside the ranges' {p.low:.0%}-{p.high:.0%} (below)"
