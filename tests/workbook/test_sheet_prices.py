"""The workbook prices a job by a "provider:plan:offering" spec as calc does (calc_prices.lookup: the
offering's newest row publishing the plan, then its cheapest; the offering any case), on the Budget
sheet (Provider, Plan, Offering) and on Scenarios (a plan's price cell), and refuses in calc's words
what calc refuses (unknown provider, plan or offering); each Scenarios plan shows its first refused
input in calc's words instead of its figures; a currency rate <= 0 or text is refused on every money
figure. Recalculated by LibreOffice (one run) and, for the e-mail copy, by Gnumeric."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable

import openpyxl
import pytest

from tests.conftest import ROOT
from tests.sheet_cases import named_value, recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.template import budget_sheet, input_checks, ranges_block, scenarios
from trainbudget.calc.base import checks as calc_checks
from trainbudget.calc.money import prices as calc_prices
from trainbudget.calc.planning import scenarios as plans

H100 = "H100 SXM, BF16 tensor core, dense"
DEFAULTS = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
# specs calc prices: an offering that is not the cheapest row, one in another case, spaces, a bare provider
PRICED = ("runpod:on_demand:Secure Cloud H100 SXM", "runpod:on_demand:community cloud h100 sxm",
          " RunPod : on_demand : SECURE CLOUD H100 SXM ", "gcp:1yr", "gcp", "lambda:on_demand:1x H100 SXM",
          "runpod:OD:secure cloud h100 sxm", "gcp:1-Year", "gcp:reserved 3yr")  # plan aliases, as calc reads them
# specs calc refuses: an offering that names no row, an unknown provider, an unknown plan, an offering
# of another hardware (runpod's H200 row for an H100 job), a plan the offering does not publish, a plan
# name that is no alias, an alias's plan on another hardware's offering (its words name the plan itself)
REFUSED = ("runpod:on_demand:Secure Cloud", "foo:on_demand", "aws:weekly", "runpod:on_demand:Secure Cloud H200",
           "gcp:spot:a3-highgpu-1g", "gcp:1 year", "gcp:3y:a3-ultragpu-8g")
# a Scenarios plan's bad inputs (row name, value), each refused as calc_plans.plan_row refuses it
PLAN_BAD = (("utilization", 40), ("params", -7e9), ("device", "H10"), ("pue", 0.5), ("price", -1.0),
            ("devices", 2.5), ("active_params", 9e9), ("tokens", "many"), ("utilization", "soon"),
            ("method", "infer"))  # (a Method that is none of calc's: not costed as training in silence)
PLAN = {"params": 7e9, "active_params": None, "tokens": 1.4e11, "device": H100, "devices": 64,
        "utilization": 0.4, "price": 2.5, "pue": 1.0, "method": None}
RATES = (0, -1.5, "abc")


def _parts(spec: str) -> tuple[str, str, str]:
    provider, _, rest = spec.partition(":")
    plan, _, offering = rest.partition(":")
    return provider.strip(), plan.strip() or "on_demand", offering.strip()


def _budget_spec(spec: str) -> Callable:
    def apply(wb) -> None:
        for name, value in zip(("Provider", "Plan", "Offering"), _parts(spec), strict=True):
            set_named(wb, name, value)
    return apply


def _plan(**changes) -> Callable:
    """Column B of Scenarios set to PLAN with `changes` (a price spec among them, or a bad input)."""
    def apply(wb) -> None:
        ws = wb["Scenarios"]
        for name, value in {**PLAN, **changes}.items():
            ws[f"B{scenarios.ROW[name]}"] = value
    return apply


def _both(spec: str) -> Callable:
    def apply(wb) -> None:
        _budget_spec(spec)(wb)
        _plan(price=spec)(wb)
    return apply


def _rate(value) -> Callable:
    def apply(wb) -> None:
        set_named(wb, "USD_rate", value)
        _plan()(wb)
    return apply


CASES = ([_both(s) for s in PRICED + REFUSED] + [_plan(**{name: value}) for name, value in PLAN_BAD]
         + [_rate(r) for r in RATES])


@pytest.fixture(scope="module")
def books(soffice, built, tmp_path_factory):
    return recalculated_copies(built.path, tmp_path_factory.mktemp("prices"), CASES)


def _rows(ws) -> dict[str, object]:
    return {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1)
            if isinstance(ws[f"A{r}"].value, str)}


def _calc_budget(spec: str) -> calc.Budget:
    return calc.budget(ranges_block.job(DEFAULTS, calc.catalog()).with_(price=spec))


def _plan_row(**changes) -> dict:
    p = {**PLAN, **changes}
    return plans.plan_row(p["params"], p["tokens"], p["device"], devices=p["devices"], utilization=p["utilization"],
                          price=p["price"], pue=p["pue"], active_params=p["active_params"],
                          method=p["method"] or "full")


def _refusal(error: calc.TrainingBudgetError) -> str:
    """calc's message as the sheet words it: the same, less the list of providers calc adds."""
    said = re.sub(r"; providers: [^)]*", "", str(error))
    return "#VALUE! " + re.sub(r" \(providers with prices for it: [^)]*\)", "", said)


def _scenario(wb, name: str) -> object:
    return wb["Scenarios"][f"B{scenarios.ROW[name]}"].value


@pytest.mark.parametrize("k", range(len(PRICED)))
def test_a_spec_calc_prices_costs_the_same_on_both_sheets(books, k):
    spec, wb = PRICED[k], books[k]
    b = _calc_budget(spec)
    row, plan = calc_prices.lookup(spec, H100)
    assert b.usd_per_device_hour == row.usd[plan]
    if k == 0:  # the offering counts: the spec without it picks another row (the plan's cheapest)
        assert row.usd[plan] != calc_prices.lookup("runpod", H100)[0].usd["on_demand"]
    assert named_value(wb, "Price_found") == pytest.approx(row.usd[plan], rel=1e-12)
    assert _rows(wb["Budget"])["Cost at typed utilization (USD)"] == pytest.approx(float(b.cost_usd), rel=1e-9)
    assert named_value(wb, "Input_error") in (None, "")
    want = _plan_row(price=spec)
    assert _scenario(wb, "price_used") == pytest.approx(row.usd[plan], rel=1e-12)
    assert _scenario(wb, "usd_expected") == pytest.approx(want["usd"], rel=1e-9)
    assert _scenario(wb, "hours_expected") == pytest.approx(want["hours"], rel=1e-9)


@pytest.mark.parametrize("k", range(len(REFUSED)))
def test_a_spec_calc_refuses_is_refused_in_its_words(books, k):
    spec, wb = REFUSED[k], books[len(PRICED) + k]
    with pytest.raises(calc.TrainingBudgetError) as e:
        _calc_budget(spec)
    said = _refusal(e.value)
    assert named_value(wb, "Input_error") == said
    rows = _rows(wb["Budget"])
    assert rows["Cost at typed utilization (USD)"] == said and rows["Wall-clock hours"] == said
    with pytest.raises(calc.TrainingBudgetError) as e:
        _plan_row(price=spec)
    for fig in ("hours", "device_hours", "usd", "kwh"):
        assert _scenario(wb, f"{fig}_expected") == _refusal(e.value), fig


@pytest.mark.parametrize("k", range(len(PLAN_BAD)))
def test_a_refused_plan_shows_its_first_refusal_in_calcs_words(books, k):
    name, value = PLAN_BAD[k]
    wb = books[len(PRICED) + len(REFUSED) + k]
    with pytest.raises(calc.TrainingBudgetError) as e:
        _plan_row(**{name: value})
    said = "#VALUE! " + str(e.value)
    if name == "device":  # calc names the closest rows; the sheet where its rows are
        said = f"#VALUE! device {input_checks.DEVICE_WORDS} (got '{value}')"
    assert _scenario(wb, scenarios.CHECK) == said
    for fig in ("hours", "device_hours", "usd", "kwh"):
        assert _scenario(wb, f"{fig}_expected") == said, fig
    ws = wb["Scenarios"]
    assert isinstance(ws[f"C{scenarios.ROW['usd_expected']}"].value, float)  # the other plans are figures still
    assert ws[f"C{scenarios.ROW[scenarios.CHECK]}"].value in (None, "")


@pytest.mark.parametrize("k", range(len(RATES)))
def test_a_currency_rate_calc_would_refuse_is_refused_on_money(books, k):
    rate, wb = RATES[k], books[-len(RATES) + k]
    with pytest.raises(calc.TrainingBudgetError) as e:
        calc_checks.positive("USD_rate", calc_checks.number("USD_rate", rate))
    said = "#VALUE! " + str(e.value)
    rows = _rows(wb["Budget"])
    assert named_value(wb, "Rate_error") == said
    assert rows["Cost at typed utilization (USD)"] == said and rows["Cost to budget (expected) (USD)"] == said
    assert isinstance(rows["Wall-clock hours"], float)  # the rate prices money only
    assert _scenario(wb, "usd_expected") == said and isinstance(_scenario(wb, "hours_expected"), float)


def test_the_email_copy_prices_the_same_in_gnumeric(built, soffice, tmp_path):
    """The copy of a workbook priced by offering specs (LibreOffice's values cached, as Excel saves
    them), recalculated by Gnumeric: the same costs, the same refusal."""
    assert shutil.which("ssconvert"), "Gnumeric is not installed: run the README's test command"
    from tests.workbook.test_portable import changed_copy, read_cells
    spec, bad = PRICED[0], REFUSED[0]
    changes: dict = dict(zip(("Provider", "Plan", "Offering"), _parts(spec), strict=True))
    changes.update({("Scenarios", "Price", "C"): PRICED[1], ("Scenarios", "Price", "D"): bad,
                    ("Scenarios", "Utilization", "C"): 0.4})
    copy = changed_copy(built.path, changes, tmp_path, "offering")
    out = tmp_path / "gnumeric.xlsx"
    subprocess.run(["ssconvert", "--recalc", str(copy), str(out)], capture_output=True, timeout=300, check=True)
    got, _ = read_cells(out)
    cost_row = next(r for r in range(1, 80) if got.get(("Budget", f"A{r}")) == "Cost at typed utilization (USD)")
    assert got[("Budget", f"B{cost_row}")] == pytest.approx(float(_calc_budget(spec).cost_usd), rel=1e-9)
    plan_c = scenarios.PLANS[1]
    want = plans.plan_row(plan_c[1], plan_c[3], plan_c[4], devices=plan_c[5], utilization=0.4, price=PRICED[1],
                          pue=plan_c[8])
    assert got[("Scenarios", f"C{scenarios.ROW['usd_expected']}")] == pytest.approx(want["usd"], rel=1e-9)
    plan_d = scenarios.PLANS[2]
    with pytest.raises(calc.TrainingBudgetError) as e:
        plans.plan_row(plan_d[1], plan_d[3], plan_d[4], devices=plan_d[5], utilization=plan_d[6], price=bad,
                       pue=plan_d[8])
    assert got[("Scenarios", f"D{scenarios.ROW['usd_expected']}")] == _refusal(e.value)


def test_the_shipped_workbook_has_the_offering_input_and_plan_checks():
    """workbook/TrainingBudget.xlsm carries the Offering input and the Scenarios checks."""
    shipped = openpyxl.load_workbook(ROOT / "workbook" / "TrainingBudget.xlsm")
    assert "Offering" in shipped.defined_names and "Rate_error" in shipped.defined_names
    ws = shipped["Scenarios"]
    assert ws[f"A{scenarios.ROW[scenarios.CHECK]}"].value == scenarios.CHECK_LABELS[-1]
