"""`trainbudget plan`: options that would change nothing are refused, prices and their age are said in calc's
words, a plan without a price or a device without watts says why, a device named twice is planned once."""

from __future__ import annotations

import json

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.money import prices
from trainbudget.calc.planning import rank as plan, scenarios as calc_plans

H100 = "H100 SXM, BF16 tensor core, dense"

B200 = "B200, BF16 tensor core, dense"

PLAN = ("plan", "--params", "7B", "--tokens", "100B", "--days", "10")


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize(("extra", "needle"), [
    (("--utilization", "0.4", "--case", "high"), "--case high picks a case of the prior's range"),
    (("--usd-per-kwh", "0.1"), "--usd-per-kwh applies to owned hardware: give --own CAPEX,LIFE too"),
    (("--limit", "-1"), "--limit must be a whole number >= 0 (got '-1')"),  # fit's words: one count type
])
def test_plan_refuses_an_option_that_would_change_nothing(capsys, extra, needle):
    """plan took --case with a given utilization (one case), --usd-per-kwh without --own and a
    negative --limit (it printed all rows but the last and "... 1 more"), changing nothing: as
    estimate does, it now refuses them, one line and exit 2."""
    code, out, err = _cli(capsys, *PLAN, "--device", H100, *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_plan_refuses_a_price_no_planned_device_has_in_calcs_words(capsys):
    """plan --device H100 --price aws:spot printed "no price" rows marked "not feasible: model states
    only" and exit 0, where estimate and calc.budget refuse the spec: now refused in lookup's words."""
    with pytest.raises(calc.TrainingBudgetError) as want:
        calc.budget(calc.job(params=7e9, device=H100, price="aws:spot"))
    code, out, err = _cli(capsys, *PLAN, "--device", H100, "--price", "aws:spot")
    assert code == 2 and out == "" and err.strip() == f"trainbudget: error: {want.value}"
    code, out, err = _cli(capsys, *PLAN, "--device", H100, "--device", B200, "--price", "aws:spot")
    assert code == 2 and "price: no aws spot price for any of the 2 devices planned" in err
    with pytest.raises(calc.TrainingBudgetError, match="no aws spot price for 'H100"):
        plan.rank_plans(plan.PlanQuestion(1e11, 10, params=7e9, devices=[H100], price="aws:spot"))


def test_a_plan_without_a_price_says_so_before_the_devices_note():
    """A device the price names no row for (B200 at aws's H100 offering), or a device without any
    price: its plans are infeasible for want of a price, and the note says that first (it said only
    "model states only (no shape: no activations)", which is no reason)."""
    plans = plan.rank_plans(plan.PlanQuestion(1e11, 10, params=7e9, devices=[H100, B200], price="aws:od:p5.48xlarge",
                            utilization=0.4))
    priced = [p for p in plans if p.device == H100]
    unpriced = [p for p in plans if p.device == B200]
    assert priced and unpriced and all(p.feasible for p in priced) and not any(p.feasible for p in unpriced)
    assert all(p.note.startswith("no aws on_demand 'p5.48xlarge' price for this device; ") for p in unpriced)
    assert prices.spec_words("aws:od:p5.48xlarge") == "aws on_demand 'p5.48xlarge'"
    measured = "M3 Ultra, PyTorch MPS bf16 matmul (measured)"
    own = plan.rank_plans(plan.PlanQuestion(1e11, 10, params=7e9, devices=[measured], utilization=0.4))
    assert own and all(p.note.startswith("no price; ") and not p.feasible for p in own)


def test_a_params_only_plan_has_the_planners_device_bound(capsys):
    """--days 1e-9 planned 193,681,587,499 H100s as feasible for a params-only job, while a model
    with a shape is refused past calc_layouts.MAX_FIT_DEVICES: now the same bound for both."""
    plans = plan.rank_plans(plan.PlanQuestion(1e11, 1e-9, params=7e9, devices=[H100]))
    assert plans and not any(p.feasible for p in plans)
    assert all("the planner considers" in p.note for p in plans)
    code, out, _ = _cli(capsys, *PLAN[:-1], "1e-9", "--device", H100, "--json")
    data = json.loads(out)
    assert code == 0 and data["fastest"] is None and all(r["devices"] is None for r in data["plans"])


def test_a_plan_says_how_old_its_prices_are(capsys):
    """azure:3yr prices the A100 80GB from a row of 2024-01-29 (the only one that publishes 3yr for it,
    sold 8 per instance): plan's table showed no date at all and its rows no age, where estimate says
    'as of ... (N days old)'. The rows now carry price_age_days (calc.budget's), the text the oldest
    date shown."""
    a100 = "A100 SXM 80GB, BF16 tensor core, dense"
    args = (*PLAN, "--device", a100, "--price", "azure:3yr")
    row, plan_name = prices.lookup("azure:3yr", a100)
    code, out, _ = _cli(capsys, *args, "--json")
    rows = json.loads(out)["plans"]
    assert code == 0 and rows and {r["price_as_of"] for r in rows} == {row.as_of}
    want = calc.budget(calc.job(params=7e9, device=a100, price="azure:3yr"))
    assert {r["price_age_days"] for r in rows} == {want.price_age_days} and want.price_age_days > 365
    code, out, _ = _cli(capsys, *args)
    assert code == 0 and f"the oldest shown: azure:{plan_name} {row.offering}, as of {row.as_of}" in out


def test_plan_says_why_owned_hardware_prices_no_plan_on_a_device_without_watts():
    """plan --own dropped the owned option without a word on a device without watts (a TPU, a
    measured row), where estimate --own refuses it ('has no watts for the energy share'): the plan
    now lists the owned option as not feasible, in calc.budget's words."""
    tpu = "TPU v6e (Trillium), BF16, dense"
    own = calc_plans.parse_own("30000,5", 0.1)
    with pytest.raises(calc.TrainingBudgetError) as said:
        calc.budget(calc.job(params=7e9, device=tpu, price=own))
    plans = plan.rank_plans(plan.PlanQuestion(1e10, 10, params=7e9, devices=[tpu], own=own))
    owned = [p for p in plans if p.price_label == own.label()]
    assert len(owned) == 1 and not owned[0].feasible and owned[0].note == str(said.value)
    assert "has no watts" in owned[0].note and owned[0].row()["cost_usd_expected"] is None
    priced = [p for p in plans if p.price_label.startswith("gcp:")]
    assert priced and any(p.feasible for p in priced)


def test_a_device_named_twice_is_planned_once():
    """plan --device X --device X ranked every plan of X twice (28 rows for 14)."""
    once = plan.rank_plans(plan.PlanQuestion(1e10, 10, params=7e9, devices=[H100], price="2", utilization=0.4))
    twice = plan.rank_plans(plan.PlanQuestion(1e10, 10, params=7e9, devices=[H100, H100], price="2", utilization=0.4))
    assert once and [p.row() for p in twice] == [p.row() for p in once]
