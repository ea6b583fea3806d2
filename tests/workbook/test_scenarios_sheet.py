"""The workbook's Prices table, the Budget's provider/plan price, currency and ranges, and the
Scenarios sheet, recalculated by LibreOffice and compared with calc (1e-9 relative).

One LibreOffice run recalculates three files: the template as built; a copy at 0.5 currency units per
USD (every money figure halves); a copy with ten random plans on Scenarios and the Budget priced by
provider and plan on an FP8 device row (its ranges use the BF16 row, as calc.train_range does).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest

from tests.sheet_cases import flag, name_ref, set_named
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import fold, input_pieces, pieces
from trainbudget.addin.template import budget_sheet, prices_sheet, range_basis, ranges_block, scenarios
from trainbudget.addin.verify import check as verify
from trainbudget.calc.money import prices
from trainbudget.calc.planning import scenarios as plans
from trainbudget.calc.prior import runs as calc_runs, utilization as calc_prior

PRICES_CSV = Path(calc.__file__).parent / "data" / "prices.csv"
FIGURES = ("hours", "device_hours", "usd", "kwh")
CASES = ("low", "expected", "high")
FP8_DEVICE = "H100 SXM, FP8 tensor core, dense"


def _random_plans(seed: int = 20261130) -> list[tuple]:
    """Ten plans: catalog devices (FP8 and measured rows among them), "prior" or a share, a number or
    a provider[:plan] that has a price for the device's hardware; some a mixture of experts (active
    parameters 5%-60% of the total, two of them at "prior" so the prior's MoE term counts), the rest
    dense (active blank)."""
    rng = np.random.default_rng(seed)
    table = calc.catalog()
    priced = [d.name for d in table if prices.find(d.name)]
    out = []
    for k in range(len(scenarios.COLUMNS)):
        device = str(rng.choice(priced if k % 3 else table.names))
        if k == 1:
            device = FP8_DEVICE
        util = "prior" if rng.random() < 0.6 else float(rng.uniform(0.1, 0.9))
        rows = prices.find(device)
        if rows and rng.random() < 0.8:
            row = rows[int(rng.integers(len(rows)))]
            plan = str(rng.choice(sorted(row.usd)))
            price = row.provider if plan == "on_demand" and rng.random() < 0.5 else f"{row.provider}:{plan}"
        else:
            price = float(rng.uniform(0.5, 12))
        params = float(10 ** rng.uniform(8, 11.5))
        moe = k in (2, 5) or rng.random() < 0.3
        active = float(params * rng.uniform(0.05, 0.6)) if moe else None
        if k in (2, 5):
            util = "prior"
        out.append((f"plan {k + 1}", params, active, float(10 ** rng.uniform(10, 13)), device,
                    int(rng.integers(1, 2049)), util, price, float(rng.uniform(1.0, 1.5))))
    out[3] = (*out[3][:7], "gcp:1yr", out[3][8])  # a provider with two H100 rows: the older one has 1-year
    out[3] = (*out[3][:4], "H100 SXM, BF16 tensor core, dense", *out[3][5:])
    return out


def _write_plans(wb, plan_rows: list[tuple]) -> None:
    ws = wb["Scenarios"]
    for c, plan in zip(scenarios.COLUMNS, plan_rows, strict=True):
        for (name, *_), value in zip(scenarios.INPUTS, plan, strict=True):
            ws[f"{c}{scenarios.ROW[name]}"] = value


@pytest.fixture(scope="module")
def lo(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scen")
    template = tmp / "template.xlsm"
    shutil.copyfile(built.path, template)
    half = tmp / "half.xlsm"
    wb = openpyxl.load_workbook(built.path, keep_vba=True)
    set_named(wb, "USD_rate", 0.5)
    set_named(wb, "Currency", "XYZ")
    wb.save(half)
    random = tmp / "random.xlsm"
    wb = openpyxl.load_workbook(built.path, keep_vba=True)
    plan_rows = _random_plans()
    _write_plans(wb, plan_rows)
    set_named(wb, "Provider", "gcp")
    set_named(wb, "Plan", "1yr")
    wb["Budget"][budget_sheet.REF["device"].replace("$", "")] = FP8_DEVICE
    set_named(wb, "Ranges_from", "published runs")  # the published runs' prior (the template: the step model)
    wb.save(random)
    out = engine.convert([template, half, random], "xlsx", tmp / "out")
    return {"template": openpyxl.load_workbook(out[0], data_only=True),
            "half": openpyxl.load_workbook(out[1], data_only=True),
            "random": openpyxl.load_workbook(out[2], data_only=True), "plans": plan_rows,
            "formulas": openpyxl.load_workbook(built.path)}


def _same(got, want) -> bool:
    if want is None or want == "":
        return got in (None, "")
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9)


def _check_plans(ws, plan_rows: list[tuple]) -> int:
    """Every result cell of every plan column equal to calc_plans.plan_row; returns cells compared."""
    checked = 0
    table = calc.catalog()
    for c, (name, params, active, tokens, device, devices, util, price, pue) in zip(scenarios.COLUMNS, plan_rows,
                                                                                    strict=False):
        row = plans.plan_row(params, tokens, device, devices=devices, utilization=util, price=price, pue=pue,
                             table=table, name=name, active_params=active)
        b = calc.budget(calc.job(params=params, active_params=active, tokens=tokens, device=device,
                                 devices=devices, utilization=util, price=price or None, pue=pue, table=table))
        assert _same(ws[f"{c}{scenarios.ROW['active_used']}"].value, float(b.active_params)), (c, active)
        assert ws[f"{c}{scenarios.ROW['moe']}"].value == int(b.active_params < params), (c, active)
        if util == "prior":  # the plan's own prior: calc.budget's utilization band of the MoE or dense job
            for case, want in zip(CASES, (b.prior.low, b.prior.expected, b.prior.high), strict=True):
                assert _same(ws[f"{c}{scenarios.ROW[f'util_{case}']}"].value, float(want)), (c, case)
        for fig in FIGURES:
            for case in CASES:
                got = ws[f"{c}{scenarios.ROW[f'{fig}_{case}']}"].value
                want = row[f"{fig}_{case}"] if util == "prior" else (row[fig] if case == "expected" else None)
                assert _same(got, want), (c, fig, case, device, util, price, got, want)
                checked += want is not None
        got_price = ws[f"{c}{scenarios.ROW['price_used']}"].value
        assert _same(got_price, row["usd_per_device_hour"]), (c, price, got_price, row["usd_per_device_hour"])
    return checked


def test_default_scenarios_equal_calc(lo):
    ws = lo["template"]["Scenarios"]
    filled = list(scenarios.PLANS)
    assert _check_plans(ws, filled) >= 5 * 12
    for c in scenarios.COLUMNS[len(filled):]:  # empty plans stay empty, no errors
        assert all(ws[f"{c}{r}"].value in (None, "") for r in range(scenarios.HELPER_FIRST, scenarios.LAST + 1))


def test_random_scenarios_equal_calc(lo):
    assert _check_plans(lo["random"]["Scenarios"], lo["plans"]) >= 10 * 4


def test_scenario_rows_read_active_params_as_the_sheet():
    """A scenarios CSV's active_params column (calc_plans.scenario_rows) gives the sheet's row
    (plan_row with active_params) for every random plan, MoE or dense; active above params refused."""
    recs = [{"name": n, "params": repr(p), "active_params": "" if a is None else repr(a), "tokens": repr(t),
             "device": d, "devices": str(k), "utilization": str(u), "price": str(pr)}
            for n, p, a, t, d, k, u, pr, _ in _random_plans()]
    got = plans.scenario_rows(recs)
    assert sum(r["active_params"] != "" for r in recs) >= 2
    for rec, row, (name, params, active, tokens, device, devices, util, price, _) in zip(
            recs, got, _random_plans(), strict=True):
        want = plans.plan_row(params, tokens, device, devices=devices, utilization=util, price=price,
                              name=name, active_params=active)
        dense = plans.plan_row(params, tokens, device, devices=devices, utilization=util, price=price, name=name)
        key = "hours_expected" if util == "prior" else "hours"
        assert row[key] == pytest.approx(want[key], rel=1e-12), rec
        assert (row[key] < dense[key]) == (active is not None), rec  # fewer active parameters: fewer hours
    with pytest.raises(calc.TrainingBudgetError, match="active_params"):
        plans.scenario_rows([{**recs[0], "active_params": repr(2 * _random_plans()[0][1])}])


def test_cached_values_equal_libreoffice(lo, built):
    """What the template shows before any recalculation is what LibreOffice computes."""
    for title in ("Scenarios", "Prices"):
        for ref, cached in built.values[title].items():
            got = lo["template"][title][ref].value
            if isinstance(got, dt.datetime):
                got = (got.date() - scenarios.EXCEL_EPOCH).days
            assert got == cached or _same(got, cached), (title, ref, got, cached)


def _labels(ws) -> dict[str, int]:
    return {c.value: c.row for c in ws["A"] if isinstance(c.value, str)}


def test_budget_ranges_equal_calc(lo):
    """The template's ranges are the step model's (its whole run on the step block's layout, as calc.budget
    composes it at that utilization), the random book's the published runs' prior (calc.train_range)."""
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    ws = lo["template"]["Budget"]
    rows = _labels(ws)
    assert ws[name_ref(lo["formulas"], "Ranges_from")[1]].value == "step model"
    b = range_basis.ranged(v, calc.catalog())
    want = {"hours": b.hours.as_tuple(), "device_hours": b.device_hours.as_tuple(), "usd": b.cost_usd.as_tuple(),
            "kwh": b.energy_kwh.as_tuple()}
    _check_ranges(ws, rows, want)
    run = [ws[name_ref(lo["formulas"], n)[1]].value for n in ("Step_run_low", "Step_run_hours", "Step_run_high")]
    assert all(_same(got, w) for got, w in zip(run, want["hours"], strict=True)), (run, want["hours"])
    # provider and plan on an FP8 row: price from Prices (gcp 1-year), ranges on the BF16 row
    ws = lo["random"]["Budget"]
    price = prices.usd_per_device_hour("gcp:1yr", FP8_DEVICE)
    assert _same(ws[f"B{rows['Price used (USD per device-hour)']}"].value, price)
    want = calc.train_range(v["params"], v["tokens"], FP8_DEVICE, devices=v["devices"], usd_per_device_hour=price,
                            pue=v["pue"])
    _check_ranges(ws, rows, want)
    chosen = name_ref(lo["formulas"], range_basis.STEP_CHOSEN)[1]
    assert flag(ws[chosen].value) is False and ws["C" + chosen[1:]].value == "published runs"
    assert flag(lo["template"]["Budget"][chosen].value) is True
    said = {book: [c.value for c in lo[book]["Summary"]["A"] if str(c.value).startswith("Utilization from")]
            for book in ("template", "random")}
    assert said == {"template": ["Utilization from the step model, each case"],
                    "random": ["Utilization from published runs, each case"]}
    hours = calc.train_hours(v["params"], v["tokens"], FP8_DEVICE, utilization=v["utilization"],
                             devices=v["devices"])
    assert _same(ws[f"B{rows[f'{budget_sheet.TYPED_COST} (USD)']}"].value, hours * v["devices"] * price)


def _check_ranges(ws, rows: dict[str, int], want: dict) -> None:
    labels = {"hours": "Hours", "device_hours": "Device-hours", "usd": "Cost", "kwh": "Energy"}
    for fig, label in labels.items():
        for j, case in enumerate(CASES):
            key = (f"{ranges_block.cost_label(case)} (USD)" if fig == "usd" else f"{label}, {case}")
            got = ws[f"B{rows[key]}"].value
            assert _same(got, float(want[fig][j])), (key, got, want[fig][j])


def _money_cells(wb) -> list[tuple[str, str]]:
    """Every money figure on the Budget and Scenarios: cells in the currency format."""
    cells = []
    for title in ("Budget", "Scenarios"):
        for row in wb[title].iter_rows():
            cells += [(title, c.coordinate) for c in row if verify.is_formula(c) and c.number_format == "#,##0"
                      and re.search(r"USD_rate", c.value)]
    return cells


def test_currency_applies_to_every_money_figure(lo):
    cells = _money_cells(lo["formulas"])
    assert len(cells) >= 1 + 3 + 36 + 3 * len(scenarios.PLANS)  # results, ranges, comparison, scenarios
    checked = 0
    for title, ref in cells:
        full, half = lo["template"][title][ref].value, lo["half"][title][ref].value
        if isinstance(full, (int, float)):
            assert math.isclose(half, full / 2, rel_tol=1e-12), (title, ref, full, half)
            checked += 1
        else:
            assert half == full and full in (None, "", pieces.NO_PRICE), (title, ref, full, half)
    assert checked >= 20
    rows = _labels(lo["half"]["Budget"])
    assert f"{budget_sheet.TYPED_COST} (XYZ)" in rows and f"{ranges_block.cost_label('expected')} (XYZ)" in rows
    assert "Cost, expected (XYZ)" in _labels(lo["half"]["Scenarios"])


def test_prices_table_rows_equal_csv(built):
    ws = openpyxl.load_workbook(built.path)["Prices"]
    table = ws.tables[prices_sheet.TABLE]
    first, last = table.ref.split(":")
    top, bottom = int(first[1:]), int(last[1:])
    headers = [c.value for c in ws[top]][:13]
    assert headers[4:8] == list(prices_sheet.PLAN_HEADERS.values()) and "Age" in headers[11]
    with PRICES_CSV.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert bottom - top == len(rows) >= 20
    for r, want in zip(range(top + 1, bottom + 1), rows, strict=True):
        got = [c.value for c in ws[r]]
        expect = [want["provider"], want["offering"], want["device"], int(want["devices_per_instance"]),
                  *(float(want[f"usd_per_device_hour_{p}"]) if want[f"usd_per_device_hour_{p}"] else None
                    for p in prices_sheet.PLANS), want["region"], want["source"]]
        assert got[:10] == expect
        assert got[10].date() == dt.date.fromisoformat(want["as_of"])
        assert got[11] == f'=IF(Rate_date="","",Rate_date-K{r})' and (got[12] or "") == want["note"]


def test_price_ages_follow_the_budget_date(lo):
    ws = lo["template"]["Prices"]
    sheet, cell = name_ref(lo["formulas"], "Rate_date")
    when = lo["template"][sheet][cell].value.date()
    ages = [(ws[f"L{r}"].value, ws[f"K{r}"].value) for r in range(prices_sheet.FIRST_ROW + 1, ws.max_row + 1)]
    assert ages and all(age == (when - as_of.date()).days for age, as_of in ages)


def test_new_sheets_formulas_short_and_folded(built):
    for title in ("Scenarios", "Prices", "Budget"):
        ws = openpyxl.load_workbook(built.path)[title]
        formulas = {c.coordinate: c.value[1:] for row in ws.iter_rows() for c in row if verify.is_formula(c)}
        assert formulas
        # a result inside its one guard (input_pieces.unless_error: a refused input's message instead) counts as itself
        assert not {ref: len(f) for ref, f in formulas.items() if len(input_pieces.unguarded(f)) > 200}
        assert not {ref: x for ref, f in formulas.items() if (x := fold.literal_comparisons(f))}


def test_prior_cells_are_named_and_sourced(built):
    wb = openpyxl.load_workbook(built.path)
    c = calc_prior.coefficients()
    for name, want in (("Prior_intercept", c.intercept), ("Prior_devices", c.devices), ("Prior_band_high", c.band_high),
                       ("Goodput", calc_prior.GOODPUT)):  # Util_low / _expected / _high: native formulas of these
        sheet, cell = name_ref(wb, name)
        assert math.isclose(wb[sheet][cell].value, want, rel_tol=1e-15)
    notes = " ".join(str(c.value) for row in wb["Budget"].iter_rows() for c in row if isinstance(c.value, str))
    assert "arXiv:2407.21783" in notes and calc_runs.load_runs()[0].run in notes


def test_scatter_chart_of_cost_against_hours(built):
    with zipfile.ZipFile(built.path) as z:
        charts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    scatter = [x for x in charts if "scatterChart" in x]
    assert len(scatter) == 1
    xml = scatter[0]
    assert len(re.findall(r'<(c:)?delete val="0"/>', xml)) == 2  # both axes drawn in Excel
    low, high = scenarios.ROW["hours_low"], scenarios.ROW["hours_high"]
    for c in scenarios.COLUMNS[:len(scenarios.PLANS)]:  # one series per plan: low / expected / high
        assert f"'Scenarios'!${c}${low}:${c}${high}" in xml
        assert f"'Scenarios'!${c}${scenarios.ROW['usd_low']}:${c}${scenarios.ROW['usd_high']}" in xml
        assert f"'Scenarios'!${c}${scenarios.ROW['name']}" in xml  # named by its Plan cell: the legend
    for name, *_ in scenarios.PLANS:
        assert f"<c:v>{name}</c:v>" in xml or f"<v>{name}</v>" in xml


def test_verify_clean_on_template(built):
    assert verify.verify(built.path, recalc=False) == []


def test_verify_reports_a_changed_scenarios_formula(built, tmp_path):
    path = tmp_path / "changed.xlsm"
    wb = openpyxl.load_workbook(built.path, keep_vba=True)
    ref = f"C{scenarios.ROW['usd_expected']}"
    wb["Scenarios"][ref] = "=1"
    wb["Scenarios"][f"C{scenarios.ROW['params']}"] = 13e9  # an input may change
    wb.save(path)
    problems = verify.verify(path, recalc=False)
    assert [p.where for p in problems if "template" in p.message] == [f"Scenarios!{ref}"]


def test_layout_active_row_under_params_and_print_area_holds_chart(built):
    """The active-parameters input sits under Model parameters, unlocked like every input, labelled
    as the Budget's helper; the print area still holds inputs, helpers, results and the chart."""
    ws = openpyxl.load_workbook(built.path)["Scenarios"]
    row = scenarios.ROW["active_params"]
    assert row == scenarios.ROW["params"] + 1 and ws[f"A{row}"].value == "Active parameters (blank: all)"
    assert all(not ws[f"{c}{row}"].protection.locked for c in scenarios.COLUMNS)
    assert ws[f"A{scenarios.ROW['active_used']}"].value == budget_sheet.HELPERS[0][1]  # the Budget's words
    moe = scenarios.COLUMNS[[p[2] is not None for p in scenarios.PLANS].index(True)]
    assert ws[f"{moe}{row}"].value < ws[f"{moe}{scenarios.ROW['params']}"].value  # a default MoE plan
    area = ws.print_area.split("!")[1].replace("$", "")
    top, bottom = area.split(":")
    assert top == "A1" and bottom[0] == scenarios.COLUMNS[-1]
    anchor = ws._charts[0].anchor._from.row + 1  # 0-based
    assert anchor > scenarios.LAST and int(bottom[1:]) >= anchor + 30  # a 16 cm chart: 30 rows or more
