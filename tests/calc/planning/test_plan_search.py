"""The planner's options and headline: every option is priced by its own row of the packaged
prices.csv (read here, no price typed), and the headline's "fastest within budget" and "cheapest
by the deadline" are the best of every count the planner considered, checked against
calc.budget at each count; the plan command's options and messages."""

from __future__ import annotations

import csv
import itertools
import json
import types
from importlib import resources

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.compose.budget import budget
from trainbudget.calc.money import prices
from trainbudget.calc.planning import inverse, rank as plan

H100 = "H100 SXM, BF16 tensor core, dense"
PLANS = ("on_demand", "1yr", "3yr", "spot")


def _csv_rows(hardware: str) -> list[dict[str, str]]:
    text = resources.files("trainbudget.calc").joinpath("data/prices.csv").read_text("utf-8")
    return [r for r in csv.DictReader(text.splitlines()) if r["device"] == hardware]


def _expected_offerings(hardware: str) -> dict[str, dict[str, str | float]]:
    """label -> the row an option of that provider, offering and plan must be priced by: the
    offering's newest row publishing the plan, then its cheapest (as prices.lookup)."""
    want: dict[str, dict[str, str | float]] = {}
    for r in _csv_rows(hardware):
        for p in PLANS:
            cell = r[f"usd_per_device_hour_{p}"].strip()
            if not cell:
                continue
            label = f"{r['provider'].strip().lower()}:{p} {r['offering']}"
            row = {"usd": float(cell), "as_of": r["as_of"], "source": r["source"]}
            held = want.get(label)
            if held is None or (row["as_of"], -row["usd"]) > (held["as_of"], -held["usd"]):
                want[label] = row
    return want


def test_every_option_is_priced_by_its_own_row():
    want = _expected_offerings("H100 SXM")
    by_provider: dict[str, set[float]] = {}
    for label, row in want.items():
        by_provider.setdefault(label.split()[0], set()).add(row["usd"])
    assert any(len(v) > 1 for v in by_provider.values())  # a provider whose offerings differ in price
    plans = plan.rank_plans(plan.PlanQuestion(1e12, 30, params=7e9, devices=[H100], utilization=0.4, spot=True))
    offered = [p for p in plans if p.price_label in want]
    assert {p.price_label for p in offered} == set(want)  # one option per distinct offering and plan
    assert {p.price_label for p in plans} - set(want) <= {"the device row's own price", "no price"}
    keys = [(p.price_label, p.devices) for p in plans]
    assert len(keys) == len(set(keys))  # no line twice
    single = [p for p in offered if p.budget is None]  # sold one device per instance: not this multi-device job
    assert single and all("one device per instance" in p.note and not p.feasible for p in single)
    priced = [p for p in offered if p.budget is not None]
    for p in priced:
        row, b = want[p.price_label], p.budget
        assert b.usd_per_device_hour == row["usd"] and b.price_as_of == row["as_of"]
        assert b.price_source == row["source"] and b.price_label == p.price_label
        assert p.row()["usd_per_device_hour"] == row["usd"] and p.row()["price_as_of"] == row["as_of"]
        assert p.figure("cost_usd") == pytest.approx(float(budget(p.job).device_hours) * row["usd"], rel=1e-12)


def test_a_spec_names_one_offering_and_an_unknown_provider_is_named():
    for label, row in _expected_offerings("H100 SXM").items():
        provider_plan, offering = label.split(" ", 1)
        got, plan_name = prices.lookup(f"{provider_plan}:{offering}", H100)
        assert (got.usd[plan_name], got.as_of, got.offering) == (row["usd"], row["as_of"], offering)
    with pytest.raises(calc.TrainingBudgetError, match="no foo prices, unknown provider"):
        prices.parse_spec("foo:bar")
    with pytest.raises(calc.TrainingBudgetError, match="no runpod on_demand 'nope'"):
        prices.lookup("runpod:on_demand:nope", H100)


def _check_headline(plans, budget_usd, days):
    """Every plan's figures are calc.budget's at its own count; the headline is the best of them."""
    for p in plans:
        if p.budget is None:  # an offering not sold for this count (one device per instance): never feasible
            assert not p.feasible and p.note
            continue
        b = budget(p.job)
        cost, hours = inverse.pick(b.cost_usd, p.case), inverse.pick(b.hours, p.case)
        assert p.figure("cost_usd") == float(cost) and p.figure("days") == float(inverse.pick(b.days, p.case))
        assert p.feasible == bool(b.fits and hours <= 24 * days * (1 + 1e-12))
        assert p.within_budget == (p.paid() <= budget_usd)
    ok = [p for p in plans if p.feasible]
    within = [p for p in ok if p.within_budget]
    top = plan.headline(plans, budget_usd)
    assert within and top["fastest"] in within and top["cheapest"] in ok
    assert all(top["cheapest"].figure("cost_usd") <= p.figure("cost_usd") for p in ok)
    assert all(top["fastest"].figure("days") <= p.figure("days") for p in within)
    same = [p for p in ok if (p.device, p.price_label) == (top["cheapest"].device, top["cheapest"].price_label)]
    assert top["fewest"] in same and all(top["fewest"].devices <= p.devices for p in same)  # the deadline's answer
    return top


def test_cost_rises_with_the_count_on_the_step_model():
    """The reviewer's job: Llama 3.1 70B on 2T tokens in 30 days on H100s, 5M USD. Each count is costed
    by the step model on its own fastest layout: replicas with fewer sequences each pay a bigger bubble
    and more exposed data-parallel traffic, so cost rises with the count (it was flat, and before that
    it fell); the cheapest is the fewest count, the fastest within budget a larger one."""
    plans = plan.rank_plans(plan.PlanQuestion(2e12, 30, model=calc.model_preset("Llama 3.1 70B"), devices=[H100],
                                                budget_usd=5e6))
    label = plans[0].price_label
    one = sorted((p for p in plans if p.price_label == label), key=lambda p: p.devices)
    n = one[0].devices
    assert [p.devices for p in one] == [n * 2 ** k for k in range(len(one))] and one[-1].devices <= 16384
    costs = [p.figure("cost_usd") for p in one]
    assert len(costs) > 2 and all(b >= a for a, b in itertools.pairwise(costs)) and costs[-1] > costs[0] * 1.05
    assert all("step model" in calc.budget(p.job).utilization_basis for p in one)
    top = _check_headline(plans, 5e6, 30)
    assert top["cheapest"].devices == n and top["fastest"].devices > n


def test_headline_with_a_given_utilization():
    """A given utilization does not move with devices (b = 0): cost is flat in the count and days
    fall, so the fastest within budget is the most devices considered."""
    plans = plan.rank_plans(plan.PlanQuestion(1e12, 20, params=8e9, devices=[H100], price="2.5", utilization=0.4,
                                                budget_usd=2e5))
    top = _check_headline(plans, 2e5, 20)
    assert top["fastest"].devices == max(p.devices for p in plans if p.feasible)


def test_the_closed_forms_refuse_a_prior_they_cannot_invert(monkeypatch):
    job = calc.job(params=70e9, tokens=15e12, device=H100, utilization="prior", price=3.0, devices=512)
    monkeypatch.setattr(inverse, "coefficients", lambda: types.SimpleNamespace(devices_exponent=-1.5,
                                                                               tokens_exponent=1.2))
    with pytest.raises(calc.TrainingBudgetError, match="devices exponent"):
        inverse.devices_for(job, 90)
    with pytest.raises(calc.TrainingBudgetError, match="tokens exponent"):
        inverse.tokens_for(job, 1e7, case="expected")


def _cli(capsys, *args):
    code = run(cli, ["plan", *args])
    got = capsys.readouterr()
    return code, got.out, got.err


JOB = ("--params", "8B", "--tokens", "1T", "--device", H100, "--price", "2.5")


@pytest.mark.parametrize(("args", "needle"), [
    (("--days", "0"), "--days must be > 0 (got 0)"),
    (("--days", "9", "--budget", "0"), "--budget must be > 0"),
    (("--days", "9", "--budget", "lots"), "--budget must be USD such as"),
    (("--days", "9", "--price", "foo:bar"), "no foo prices, unknown provider (got 'foo:bar'"),
])
def test_cli_messages_name_the_option(capsys, args, needle):
    code, out, err = _cli(capsys, *JOB[:-2], *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_cli_budget_takes_counts_and_goodput_is_honoured(capsys):
    code, out, _ = _cli(capsys, *JOB, "--days", "9", "--budget", "50M", "--json")
    plain = json.loads(out)
    assert code == 0 and plain["question"]["budget_usd"] == 5e7
    code, out, _ = _cli(capsys, *JOB, "--days", "9", "--budget", "5e7", "--json")
    assert json.loads(out)["plans"] == plain["plans"]
    code, out, _ = _cli(capsys, *JOB, "--days", "9", "--goodput", "0.9", "--json")
    data = json.loads(out)
    want = plan.rank_plans(plan.PlanQuestion(1e12, 9, params=8e9, devices=[H100], price="2.5", goodput=0.9))
    assert code == 0 and data["plans"] == json.loads(json.dumps([p.row() for p in want]))
    assert all(budget(p.job).goodput == 0.9 for p in want)
    assert data["plans"][0]["days_expected"] != plain["plans"][0]["days_expected"]
    code, out, _ = _cli(capsys, *JOB, "--days", "9", "--utilization", "0.4", "--goodput", "90%")
    assert code == 0 and "goodput 0.90 (given)" in out


def test_cli_says_when_no_count_is_considered(capsys):
    preset = calc.model_preset("Llama 3.1 405B")
    over = [p for p in plan.rank_plans(plan.PlanQuestion(15e12, 1, model=preset)) if "the planner considers" in p.note]
    assert over and not any(p.feasible for p in over)
    code, out, err = _cli(capsys, "--model", "Llama 3.1 405B", "--tokens", "15T", "--days", "1", "--device",
                          over[0].device)
    assert code == 0 and err == ""
    assert "no plan: 1 day needs at least " in out and "more than the 16,384 the planner considers" in out


def test_the_sentence_gives_the_cheapest_at_the_fewest_devices_with_no_caveat(capsys):
    """"How many devices for the deadline" is answered by the cheapest plan: at one device and price
    more devices never cost less, so the cheapest is the fewest that meet the deadline; the old
    caveat ("read the larger counts as optimistic") is gone and the rule is stated."""
    code, out, _ = _cli(capsys, "--model", "Llama 3.1 70B", "--tokens", "2T", "--days", "30", "--device", H100)
    assert code == 0
    first = out.splitlines()[0]
    plans = plan.rank_plans(plan.PlanQuestion(2e12, 30, model=calc.model_preset("Llama 3.1 70B"), devices=[H100]))
    top = plan.headline(plans)
    fewest = int(min(p.devices for p in plans if p.feasible and p.price_label == top["cheapest"].price_label))
    assert f"cheapest by the deadline: {fewest:,} x " in first and top["cheapest"].devices == fewest
    assert "optimistic" not in first and "more devices never cost less" in out


def test_layout_column_does_not_read_expert_parallel_as_a_factor_of_the_devices():
    """The plan table's layout: devices = TP x PP x CP x DP; expert parallelism splits the experts
    within the data-parallel ranks, so it is shown beside DP (and only when > 1), never as a
    fifth factor ("EP8 DP64" on 64 devices read as 512)."""
    from trainbudget.addin.cli import plan as plan_cli
    row = {"tp": 2, "pp": 1, "cp": 1, "ep": 8,
           "dp": 32, "zero_stage": 1}
    text = plan_cli._layout(row)
    assert text == "TP2 PP1 CP1 DP32 (EP8) Z1"
    assert plan_cli._layout(dict(row, ep=1)) == "TP2 PP1 CP1 DP32 Z1"
    factors = [int(t[2:]) for t in text.split() if t[:2] in ("TP", "PP", "CP", "DP")]
    assert factors[0] * factors[1] * factors[2] * factors[3] == 64
