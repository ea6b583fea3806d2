"""Prices (sourced, dated, >= 20 rows from >= 6 providers), owned hardware, and the CLI commands."""

import csv
import datetime as dt
import io
import json
from importlib import resources

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.money import owned, prices
from trainbudget.calc.planning import scenarios as plans

H100 = "H100 SXM, BF16 tensor core, dense"


def _rows(name):
    text = resources.files("trainbudget.calc").joinpath(f"data/{name}").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_prices_sourced_dated_and_enough():
    rows = _rows("prices.csv")
    hardware = {r["hardware"] for r in _rows("devices.csv")}
    assert len(rows) >= 20 and len({r["provider"] for r in rows}) >= 6
    for r in rows:
        assert r["source"].strip() and dt.date.fromisoformat(r["as_of"]) <= dt.date(2026, 11, 30), r
        assert r["device"] in hardware, r["device"]
        assert float(r["usd_per_device_hour_on_demand"]) > 0
        assert int(r["devices_per_instance"]) >= 1
    assert len(calc.load_prices()) == len(rows)


def test_find_and_lookup_by_device_provider_and_plan():
    h100 = prices.find(H100)
    assert h100 and all(p.device == "H100 SXM" for p in h100)
    assert {p.provider for p in prices.find("H100 SXM", plan="3yr")} == {"gcp"}
    row, plan = prices.lookup("gcp:3yr", H100)
    assert (row.usd[plan], row.as_of, plan) == (4.86, "2025-03-17", "3yr")
    newest, _ = prices.lookup("gcp", H100)  # on demand: the newest row wins
    assert newest.as_of == max(p.as_of for p in prices.find(H100, "gcp"))
    assert prices.usd_per_device_hour("coreweave:spot", "B200") == pytest.approx(34.11 / 8)
    assert prices.usd_per_device_hour("2.5", H100) == 2.5
    with pytest.raises(calc.TrainingBudgetError, match="plan must be one of"):
        prices.parse_spec("aws:forever")


def test_age_in_days_is_shown():
    p = prices.load_prices()[0]
    assert p.age_days(dt.date.fromisoformat(p.as_of) + dt.timedelta(days=10)) == 10
    row = prices.price_rows("B200", today=dt.date(2026, 12, 1))[0]
    assert row["age_days"] == (dt.date(2026, 12, 1) - dt.date.fromisoformat(row["as_of"])).days


def test_owned_cost_by_hand():
    # H100: 33,819 USD over 5 years at 80% occupancy, 700 W, 1.58 PUE, 0.10 USD/kWh:
    # depreciation 33,819 USD / (5 y * 8,760 h/y * 0.8) = 0.96516 USD/h;
    # energy 0.7 kW * 1.58 * 0.10 USD/kWh = 0.1106 USD/h
    got = calc.owned_usd_per_device_hour(33_819, life_years=5, watts=700, usd_per_kwh=0.10, pue=1.58, occupancy=0.8)
    assert got == pytest.approx(33_819 / (5 * 8760 * 0.8) + 0.7 * 1.58 * 0.10)
    assert got == pytest.approx(1.07576, abs=1e-5)
    half = calc.owned_usd_per_device_hour(33_819, life_years=5, residual=0.5, watts=0, usd_per_kwh=0)
    assert half == pytest.approx(33_819 * 0.5 / (5 * 8760))
    arr = calc.owned_usd_per_device_hour([30_000, 40_000], life_years=[[3], [6]], watts=700, usd_per_kwh=0.1)
    assert arr.shape == (2, 2)
    assert set(owned.LIFE_YEARS_PRESETS) == {3, 5, 6} and all(owned.LIFE_YEARS_PRESETS.values())
    for bad in ({"residual": 1.5}, {"occupancy": 0}, {"pue": 0.9}, {"life_years": 0}):
        with pytest.raises(calc.TrainingBudgetError):
            calc.owned_usd_per_device_hour(1e4, **{"watts": 700, "usd_per_kwh": 0.1, **bad})


def test_owned_price_is_usable_as_a_price():
    usd = calc.owned_usd_per_device_hour(33_819, life_years=6, watts=700, usd_per_kwh=0.1)
    cost = calc.train_range(7e9, 1e12, H100, usd_per_device_hour=usd)["usd"]
    assert cost == pytest.approx(calc.train_range(7e9, 1e12, H100)["device_hours"] * usd)
    row = plans.plan_row(7e9, 1e12, H100, own=plans.parse_own("33819,6", 0.1))
    assert row["usd_per_device_hour"] == pytest.approx(usd)


def test_scenarios_rows_and_errors():
    b200 = "B200, BF16 tensor core, dense"
    rows = plans.scenario_rows([{"name": "a", "params": "7B", "tokens": "1T", "device": H100, "price": "lambda"},
                                {"name": "b", "params": "13B", "tokens": "1T", "device": b200,
                                 "devices": "8", "utilization": "0.4", "price": "3"}])
    assert rows[0]["usd_expected"] == pytest.approx(rows[0]["device_hours_expected"] * 3.99)
    assert rows[1]["usd"] == pytest.approx(calc.train_cost(13e9, 1e12, b200,
                                                           usd_per_device_hour=3, utilization=0.4, devices=8))
    with pytest.raises(calc.TrainingBudgetError, match="scenario 1: tokens is required"):
        plans.scenario_rows([{"params": "7B", "device": H100}])
    with pytest.raises(calc.TrainingBudgetError, match="unknown column"):
        plans.scenario_rows([{"params": "7B", "tokens": "1T", "device": H100, "colour": "red"}])


def test_prices_command():
    rows = json.loads(invoke("prices", "--device", "H100 SXM", "--json", check=True).stdout)
    assert rows and all(r["device"] == "H100 SXM" and r["as_of"] and r["age_days"] >= 0 for r in rows)
    text = invoke("prices", check=True).stdout
    assert "days old" in text and "coreweave" in text
    got = list(csv.DictReader(io.StringIO(invoke("prices", "--provider", "aws", "--csv", check=True).stdout)))
    assert {r["provider"] for r in got} == {"aws"}
    bad = invoke("prices", "--device", "abacus")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_estimate_range_price_own_and_scenarios(tmp_path):
    out = json.loads(invoke("estimate", "--range", "--price", "aws:on_demand", "--device", H100, "--devices", "8",
                             "--json", check=True).stdout)
    (row,) = out["rows"]
    want = calc.train_range(7e9, 1e9, H100, usd_per_device_hour=6.88, devices=8)["usd"]
    assert [row["cost_usd_low"], row["cost_usd_expected"], row["cost_usd_high"]] == pytest.approx(list(want))
    assert row["price_as_of"] == "2026-11-09" and out["prior"]["n_runs"] >= 25
    text = invoke("estimate", "--range", "--device", H100, check=True).stdout
    assert "low / expected / high" in text and "utilization prior" in text
    num = json.loads(invoke("estimate", "--price", "2.5", "--utilization", "0.5", "--device", H100, "--json",
                             check=True).stdout)["rows"][0]
    assert num["cost_usd"] == pytest.approx(calc.train_cost(7e9, 1e9, H100, usd_per_device_hour=2.5, utilization=0.5))
    own = json.loads(invoke("estimate", "--own", "33819,5", "--usd-per-kwh", "0.1", "--device", H100, "--json",
                             check=True).stdout)["rows"][0]
    assert own["usd_per_device_hour"] == pytest.approx(33819 / (5 * 8760) + 0.7 * 1.58 * 0.1)
    plan_file = tmp_path / "plans.csv"
    plan_file.write_text(f"name,params,tokens,device,devices,price\n7B,7B,1T,\"{H100}\",8,lambda\n"
                         f"13B,13B,1T,\"{H100}\",16,runpod:on_demand\n", "utf-8")
    got = list(csv.DictReader(io.StringIO(invoke("estimate", "--scenarios", str(plan_file), "--range", "--csv",
                                                  check=True).stdout)))
    assert [r["name"] for r in got] == ["7B", "13B"] and all(float(r["cost_usd_expected"]) > 0 for r in got)
    for args in (("--own", "1,2"), ("--price", "aws:forever"), ("--own", "x", "--usd-per-kwh", "1")):
        bad = invoke("estimate", *args)
        assert bad.returncode == 2 and bad.stderr.startswith("trainbudget: error:") and "Traceback" not in bad.stderr


@pytest.mark.parametrize("command", [("prices",), ("estimate",)])
def test_help(command):
    text = invoke(*command, "--help", check=True).stdout
    for word in (("--device", "--provider") if command == ("prices",) else ("--range", "--price", "--own",
                                                                             "--scenarios")):
        assert word in text
