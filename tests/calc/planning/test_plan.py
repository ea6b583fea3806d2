"""The planner's inverse questions against calc.budget: the deadline's answer is the smallest count
that meets it (n meets, n - step does not), the budget's the largest token count within it, and every
figure of a ranked plan is what budget(job) says for that plan's job."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.compose.budget import budget
from trainbudget.calc.money import prices as calc_prices
from trainbudget.calc.planning import inverse, rank as plan

H100 = "H100 SXM, BF16 tensor core, dense"
H200 = "H200 SXM, BF16 tensor core, dense"
RNG = np.random.default_rng(20261201)
JOBS = [(float(10 ** RNG.uniform(8.5, 11.7)), float(10 ** RNG.uniform(10, 13.3)),
         str(RNG.choice([H100, H200, "B200, BF16 tensor core, dense", "MI300X, BF16 matrix, dense"])),
         float(RNG.uniform(1, 200)), float(RNG.uniform(0.2, 0.6))) for _ in range(12)]


def _hours(params, tokens, device, n, utilization, case=None):
    b = budget(calc.job(params=params, tokens=tokens, device=device, devices=n, utilization=utilization, zero_stage=3))
    h = b.hours if case is None else getattr(b.hours, case)
    return h, b.fits


@pytest.mark.parametrize(("params", "tokens", "device", "days", "u"), JOBS)
def test_deadline_answer_is_the_smallest_count_that_meets_it(params, tokens, device, days, u):
    n = inverse.devices_for_days(params, tokens, device, days, utilization=u, zero_stage=3)
    assert n >= 1 and float(n).is_integer()
    hours, fits = _hours(params, tokens, device, n, u)
    assert hours <= 24 * days * (1 + 1e-12) and fits
    if n > 1:
        hours, fits = _hours(params, tokens, device, n - 1, u)
        assert hours > 24 * days or not fits


@pytest.mark.parametrize("case", ["expected", "high"])
def test_deadline_at_the_priors_case(case):
    n = inverse.devices_for_days(70.6e9, 15e12, H200, 90, utilization="prior", case=case)
    assert _hours(70.6e9, 15e12, H200, n, "prior", case)[0] <= 24 * 90 * (1 + 1e-12)
    assert _hours(70.6e9, 15e12, H200, n - 1, "prior", case)[0] > 24 * 90
    three = inverse.devices_for_days(70.6e9, 15e12, H200, 90, utilization="prior", case=None)
    assert three[0] <= three[1] <= three[2] and n in three
    # the issue: "about 2,400 H200s for a 70B on 15T tokens in 90 days"; the job's own prior (Hopper,
    # 70B, about 3k devices, 212 tokens/param) expects 30% utilization: 3,029
    assert 2000 < three[1] < 3500


def test_deadline_in_whole_nodes():
    n = inverse.devices_for_days(70.6e9, 15e12, H100, 90, utilization=0.4, node=8)
    assert n % 8 == 0
    assert _hours(70.6e9, 15e12, H100, n, 0.4)[0] <= 24 * 90 * (1 + 1e-12)
    assert _hours(70.6e9, 15e12, H100, n - 8, 0.4)[0] > 24 * 90
    assert n - 8 < inverse.devices_for_days(70.6e9, 15e12, H100, 90, utilization=0.4) <= n


def test_memory_sets_the_count_when_time_does_not():
    n = inverse.devices_for_days(405e9, 1e9, H100, 365, utilization=0.4, zero_stage=3)  # memory decides
    assert inverse.devices_for_days(405e9, 1e9, H100, 365, utilization=0.4) == 1  # time alone: one device
    assert budget(calc.job(params=405e9, device=H100, devices=n, zero_stage=3)).fits
    assert not budget(calc.job(params=405e9, device=H100, devices=n - 1, zero_stage=3)).fits


def test_deadline_broadcasts_like_scalars():
    params = np.array([7e9, 70.6e9, 405e9])
    days = np.array([[10.0], [90.0]])
    got = inverse.devices_for_days(params, 15e12, H100, days, utilization=0.4, zero_stage=3)
    assert got.shape == (2, 3)
    for i, d in enumerate(days[:, 0]):
        for j, p in enumerate(params):
            assert got[i, j] == inverse.devices_for_days(float(p), 15e12, H100, float(d), utilization=0.4, zero_stage=3)


@pytest.mark.parametrize(("params", "tokens", "device", "days", "u"), JOBS[:6])
def test_budget_answer_is_the_largest_token_count_within_it(params, tokens, device, days, u):
    usd = days * 1e5
    t = inverse.tokens_for_budget(params, device, usd, usd_per_device_hour=2.5, utilization=u, devices=64)
    assert float(t).is_integer()
    cost = budget(calc.job(params=params, tokens=t, device=device, devices=64, utilization=u, price=2.5)).cost_usd
    more = budget(calc.job(params=params, tokens=t + 1, device=device, devices=64, utilization=u, price=2.5)).cost_usd
    assert cost <= usd < more


def test_budget_answer_as_a_range_and_by_the_deadline():
    three = inverse.tokens_for_budget(70.6e9, H100, 2e6, usd_per_device_hour=2.5, utilization="prior")
    assert three.shape == (3,) and three[0] < three[1] < three[2]
    for t, case in zip(three, ("high", "expected", "low"), strict=True):  # most tokens: the cheapest case
        job = calc.job(params=70.6e9, tokens=t, device=H100, utilization="prior", price=2.5)
        assert getattr(budget(job).cost_usd, case) <= 2e6 < getattr(budget(job.with_(tokens=t + 1)).cost_usd, case)
    job = calc.job(params=8e9, tokens=1.0, device=H100, devices=256, utilization=0.4)
    t = inverse.tokens_by(job, 30)
    assert budget(job.with_(tokens=t)).hours <= 720 < budget(job.with_(tokens=t + 1)).hours


def test_bad_input_names_the_argument():
    with pytest.raises(calc.TrainingBudgetError, match="days"):
        inverse.devices_for_days(7e9, 1e12, H100, 0)
    with pytest.raises(calc.TrainingBudgetError, match="usd"):
        inverse.tokens_for_budget(7e9, H100, -5, usd_per_device_hour=2.5)
    with pytest.raises(calc.TrainingBudgetError, match="price"):
        inverse.tokens_for_budget(7e9, H100, 1e6)  # the H100 row has no price of its own
    with pytest.raises(calc.TrainingBudgetError, match="case"):
        inverse.devices_for_days(7e9, 1e12, H100, 3, utilization="prior", case="median")


@pytest.fixture(scope="module")
def ranked():
    return plan.rank_plans(plan.PlanQuestion(15e12, 90, model=calc.model_preset("Llama 3.1 405B"), budget_usd=80e6))


def test_ranked_plans_are_budgets_of_their_jobs(ranked):
    feasible = [p for p in ranked if p.feasible]
    assert len(feasible) >= 10 and ranked[: len(feasible)] == feasible  # feasible first
    paid = [p.paid() for p in feasible]  # what the team pays: the cost, or a commitment's total
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(paid))
    for p in feasible[:12]:
        r, lay = p.row(), p.layout
        job = calc.job(model="Llama 3.1 405B", tokens=15e12, device=p.device, devices=r["devices"], tp=lay["tp"],
                       pp=lay["pp"], cp=lay["cp"], ep=lay["ep"], vpp=lay["vpp"], zero_stage=lay["zero_stage"],
                       micro_batch=lay["micro_batch"], recompute="selective" if lay["recompute"] == "op" else
                       lay["recompute"], activations=lay["activations"], utilization="step",
                       price=p.budget.job.pricing.price,
                       seq_len=calc.DEFAULT_SEQ_LEN,
                       global_batch_tokens=calc.DEFAULT_GLOBAL_BATCH * calc.DEFAULT_SEQ_LEN)
        b = budget(job)  # the plan's figures are the step model's on the plan's own layout
        assert b.fits and r["fits"]
        assert r["days_expected"] == pytest.approx(b.days.expected, rel=1e-9)
        assert r["cost_usd_expected"] == pytest.approx(b.cost_usd.expected, rel=1e-9)
        assert lay["dp"] * lay["micro_batch"] * lay["accumulation"] == calc.DEFAULT_GLOBAL_BATCH
        assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == r["devices"]


def test_ranked_plan_counts_are_whole_instances_doubled_and_the_fewest_meets_the_deadline(ranked):
    from trainbudget.calc.planning import offers
    fewest = {}
    for p in (p for p in ranked if p.feasible):
        fewest[p.device, p.price_label] = min(fewest.get((p.device, p.price_label), p), p, key=lambda q: q.devices)
    assert len({d for d, _ in fewest}) >= 3
    for (device, label), p in fewest.items():
        o = next(offers.offer(s, lab, device, calc.catalog())
                 for s, lab in offers.price_options(device) if lab == label)
        step, slices = o.rule(None)
        n = int(p.devices)
        assert offers.is_sold(n, step, slices) and n <= calc.max_plan_devices()
        if not slices:  # instance x 2^k: every parallel size a power of two (times the instance's odd part)
            assert n % step == 0 and (n // step) & (n // step - 1) == 0
        half = n // 2  # the count below it in the doublings misses the deadline or holds no layout
        if half >= step and half % step == 0 and not slices:
            same = [q for q in ranked if (q.device, q.price_label) == (device, label) and q.devices == half]
            assert not any(q.feasible for q in same)


def test_a_given_price_and_owned_hardware_are_options():
    plans = plan.rank_plans(plan.PlanQuestion(1e12, 30, params=7e9, devices=[H100], price="3.5", utilization=0.4,
                            own=calc.Owned(33819, 5, 0.1)))
    assert len({p.price_label for p in plans}) == 2 and plans[0].price_label.startswith("owned")  # 0.88 < 3.5
    n = min(p.devices for p in plans)  # no shape: doublings while each device takes a sequence a step
    counts = sorted({p.devices for p in plans})
    assert counts == [n * 2 ** k for k in range(len(counts))] and 2 * counts[-1] > calc.DEFAULT_GLOBAL_BATCH
    assert max(p.devices for p in plans) <= calc.DEFAULT_GLOBAL_BATCH
    assert {p.budget.usd_per_device_hour for p in plans} == {
        3.5, calc.owned_usd_per_device_hour(33819, life_years=5, watts=700, usd_per_kwh=0.1)}
    aws = plan.rank_plans(plan.PlanQuestion(1e12, 30, params=7e9, devices=[H100], price="aws:on_demand"))
    assert {p.budget.usd_per_device_hour for p in aws} == {calc_prices.usd_per_device_hour("aws:on_demand", H100)}


def _cli(capsys, *args):
    code = run(cli, ["plan", *args])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_cli_text_leads_with_one_sentence(capsys):
    code, out, _ = _cli(capsys, "--model", "Llama 3.1 70B", "--tokens", "15T", "--days", "90", "--budget", "5e7")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("Fastest within budget: ") and "; cheapest by the deadline: " in first
    rows = [line for line in out.splitlines()[2:] if line[:3].strip().isdigit()]
    assert len(rows) == 20 and all(" TP" in line for line in rows[:5])  # --limit's default


def test_cli_json_and_csv_are_the_ranked_rows(capsys):
    args = ("--params", "70.6B", "--tokens", "15T", "--days", "365", "--device", H200, "--device", H100)
    code, out, _ = _cli(capsys, *args, "--json")
    data = json.loads(out)
    want = [p.row() for p in plan.rank_plans(plan.PlanQuestion(15e12, 365, params=70.6e9, devices=[H200, H100]))]
    assert code == 0 and data["plans"] == json.loads(json.dumps(want))
    assert data["cheapest"] == data["plans"][0]
    code, out, _ = _cli(capsys, *args, "--csv")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(want) + 1 and lines[0].startswith("device,price,")


@pytest.mark.parametrize(("args", "needle"), [
    (("--tokens", "1T", "--days", "9"), "--model"),
    (("--params", "7B", "--tokens", "1T", "--days", "-1"), "days"),
    (("--params", "7B", "--tokens", "1T", "--days", "9", "--utilization", "0.4", "--range"), "not both"),
    (("--params", "7B", "--tokens", "1T", "--days", "9", "--device", "H900"), "H900"),
])
def test_cli_bad_input_one_line_exit_2(capsys, args, needle):
    code, out, err = _cli(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_no_plan_figure_is_nan_or_inf(ranked):
    for p in ranked:
        for v in p.row().values():
            assert not (isinstance(v, float) and not math.isfinite(v))


# --- Excel: the registry's native forms and the Budget sheet's block, recalculated by LibreOffice ----

VARIANTS = [  # Budget inputs changed in a copy of the template (the template as built is checked too)
    {"params": 70.6e9, "tokens": 15e12, "device": H200, "utilization": 0.35, "devices": 1024,
     "usd_per_device_hour": 3.1, "Deadline_days": 90.0, "Budget_USD": 2e7},
    {"params": 405e9, "tokens": 2e12, "device": "H100 SXM, FP8 tensor core, dense", "utilization": 0.2,
     "devices": 4096, "usd_per_device_hour": 2.2, "Deadline_days": 45.0, "Budget_USD": 3e6},
    {"tokens": 2e12, "Deadline_days": 20.0},  # the template's model: the ranges from the step, the deadline by time
]
NATIVE = ("TRAIN_DEVICES_FOR_DAYS", "TRAIN_TOKENS_FOR_BUDGET")
NATIVE_ARGS = ("params", "tokens", "device", "days", "utilization", "usd", "usd_per_device_hour", "devices",
               "active_params")


def _random_calls(n=30):
    rng = np.random.default_rng(20)
    names = [d.name for d in calc.catalog()]
    calls = [{"params": float(10 ** rng.uniform(8, 12)), "tokens": float(10 ** rng.uniform(9, 13.3)),
             "device": str(rng.choice(names)), "days": float(rng.uniform(1, 365)),
             "utilization": float(rng.uniform(0.1, 1)), "usd": float(10 ** rng.uniform(3, 8)),
             "usd_per_device_hour": float(rng.uniform(0.5, 10)), "devices": int(rng.integers(1, 5000))}
            for _ in range(n)]
    moe = np.random.default_rng(21)  # every other call a mixture of experts (blank: dense)
    for k, call in enumerate(calls):
        call["active_params"] = call["params"] * float(moe.uniform(0.02, 0.5)) if k % 2 else None
    return calls


def _variant(template, path, inputs, calls=None):
    import openpyxl

    from trainbudget.addin.functions.registry import BY_NAME
    from trainbudget.addin.template import budget_sheet

    wb = openpyxl.load_workbook(template, keep_vba=True)
    ws = wb["Budget"]
    for name, value in inputs.items():
        ref = budget_sheet.REF.get(name) or wb.defined_names[name].attr_text.split("!")[1]
        ws[ref.replace("$", "")] = value
    if calls:
        sheet = wb.create_sheet("Plan calls")
        for r, call in enumerate(calls, start=1):
            refs = {}
            for c, name in enumerate(NATIVE_ARGS, start=1):
                sheet.cell(r, c, call[name])
                refs[name] = sheet.cell(r, c).coordinate
            for c, fname in enumerate(NATIVE, start=len(NATIVE_ARGS) + 1):
                spec = BY_NAME[fname]
                sheet.cell(r, c, "=" + spec.native_formula({a.name: refs[a.name] for a in spec.args}))
    wb.save(path)


@pytest.fixture(scope="module")
def recalculated(soffice, built, tmp_path_factory):
    import openpyxl

    from trainbudget.addin import libreoffice as engine

    tmp = tmp_path_factory.mktemp("plan_lo")
    paths = [built.path]
    for i, inputs in enumerate(VARIANTS):
        paths.append(tmp / f"variant{i}.xlsm")
        _variant(built.path, paths[-1], inputs, _random_calls() if i == 0 else None)
    return [openpyxl.load_workbook(p, data_only=True) for p in engine.convert(paths, "xlsx", tmp / "out")]


def _close(got, want):
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-13, abs_tol=1.0)  # a whole token


def test_deadline_block_equals_calc_in_libreoffice(recalculated):
    from trainbudget.addin.template import budget_sheet, deadline_block, range_basis, sheet_job

    bases = set()
    defaults = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    defaults.update({name: default for name, _, default, *_ in deadline_block.INPUTS})
    for wb, inputs in zip(recalculated, [{}, *VARIANTS], strict=True):
        v = {**defaults, **inputs}
        p, t, d, u, days, usd = (v[k] for k in ("params", "tokens", "device", "utilization", "Deadline_days",
                                                  "Budget_USD"))
        price, n = v["usd_per_device_hour"], v["devices"]
        want_states = inverse.devices_for_days(p, 1.0, d, 1e9, zero_stage=3)
        want = {"Devices that hold the model states": want_states,
                "Devices for the deadline": inverse.devices_for_days(p, t, d, days, utilization=u, zero_stage=3),
                "Tokens for the budget": inverse.tokens_for_budget(p, d, usd, usd_per_device_hour=price,
                                                                utilization=u, devices=n)}
        three = inverse.devices_for_days(p, t, d, days, utilization="prior", case=None, zero_stage=3)
        if range_basis.step_applies(v):  # the step block's layout at each count (calc.devices_for at "step")
            three = [max(inverse.devices_for(_step_job(v), days, case=c, memory=False), want_states)
                     for c in ("low", "expected", "high")]
        tokens = inverse.tokens_for_budget(p, d, usd, usd_per_device_hour=price, utilization="prior", devices=n)
        if range_basis.step_applies(v):  # the ranges from the step model (the template's job): its tokens too
            job = sheet_job.job(v, calc.catalog()).with_(utilization=range_basis.step_prior(v, calc.catalog()))
            tokens = inverse.tokens_for(job, usd)
            bases.add("step")
        else:
            bases.add("prior")
        for j, case in enumerate(("low", "expected", "high")):
            want[f"Devices for the deadline, {case}"] = three[j]
            want[f"Tokens for the budget, {case}"] = tokens[j]
        ws = wb["Budget"]
        got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value}
        for label, value in want.items():
            assert _close(got[label], float(value)), (inputs.get("device"), label, got[label], value)
    assert len({float(v) for v in want.values()}) > 4  # the variant's figures are not all one number
    assert bases == {"step", "prior"}  # the tokens at both of the ranges' bases
    assert len(set(three)) == 3 and min(three) > want_states  # the last: three answers, each from time


def _step_job(v):
    """The Budget's job as calc times it at "step": the step block's preset, layout and batch."""
    from trainbudget.addin.template import model_block, sheet_job, step_block

    lay = {n: d for n, _, _, d, _ in model_block.LAYOUT_INPUTS}
    s = {n: d for n, _, d, _, _ in step_block.STEP_INPUTS}
    return sheet_job.job(v, calc.catalog(), params=None, model=model_block.PRESET, tp=lay["Tensor_parallel"],
                         pp=lay["Pipeline_parallel"], ep=lay["Expert_parallel"], seq_len=s["Step_seq_len"],
                         global_batch_tokens=s["Step_batch"] * s["Step_seq_len"], micro_batch=s["Step_micro_batch"],
                         vpp=s["Step_vpp"], cp=s["Step_cp"], recompute=s["Step_recompute"], utilization="step")


def test_native_forms_equal_calc_at_random_inputs_in_libreoffice(recalculated):
    from trainbudget.addin.functions.registry import BY_NAME

    ws = recalculated[1]["Plan calls"]
    checked = 0
    for r, call in enumerate(_random_calls(), start=1):
        for c, fname in enumerate(NATIVE, start=len(NATIVE_ARGS) + 1):
            spec = BY_NAME[fname]
            want = spec.call({a.name: call[a.name] for a in spec.args})
            assert _close(ws.cell(r, c).value, want), (r, fname, call, ws.cell(r, c).value, want)
            checked += 1
    assert checked == 60


def test_budget_answer_broadcasts_like_scalars():
    usd = np.array([1e5, 1e6, 1e7])
    got = inverse.tokens_for_budget(70.6e9, H100, usd, usd_per_device_hour=np.array([[2.0], [3.0]]), utilization=0.4)
    assert got.shape == (2, 3)
    for i, price in enumerate((2.0, 3.0)):
        for j, u in enumerate(usd):
            assert got[i, j] == inverse.tokens_for_budget(70.6e9, H100, float(u), usd_per_device_hour=price,
                                                       utilization=0.4)


def test_cli_budget_line_and_the_slow_case(capsys):
    args = ("--params", "70.6B", "--tokens", "5T", "--days", "365", "--device", H200, "--price", "2.5",
            "--budget", "3e7")
    code, out, _ = _cli(capsys, *args, "--case", "high", "--json")
    data = json.loads(out)
    plans = plan.rank_plans(plan.PlanQuestion(5e12, 365, params=70.6e9, devices=[H200], price="2.5", case="high",
                                                budget_usd=3e7))
    p = min(plans, key=lambda q: q.devices)  # the deadline's fewest count
    assert code == 0 and min(r["devices"] for r in data["plans"]) == p.devices and p.feasible
    half = p.job.with_(devices=p.devices / 2, utilization="prior")  # the count below, at its own prior
    assert budget(p.job).days.high <= 365 * (1 + 1e-12) < budget(half).days.high
    cheapest = plan.headline(plans, 3e7)["cheapest"]
    assert data["budget_tokens_on_cheapest"] == list(inverse.tokens_for(cheapest.job, 3e7))


def test_cli_owned_hardware_and_whole_nodes(capsys):
    args = ("--params", "7B", "--tokens", "1T", "--days", "9", "--device", H100, "--price", "aws:on_demand",
            "--own", "33819,5", "--usd-per-kwh", "0.1", "--node", "8", "--utilization", "40%")
    code, out, _ = _cli(capsys, *args, "--json")
    rows = json.loads(out)["plans"]
    assert code == 0 and list(dict.fromkeys(r["price"].split()[0] for r in rows)) == ["owned", "aws:on_demand"]
    assert rows[0]["usd_per_device_hour"] == calc.owned_usd_per_device_hour(33819, life_years=5, watts=700,
                                                                            usd_per_kwh=0.1, pue=1.58)
    n = inverse.devices_for_days(7e9, 1e12, H100, 9, utilization=0.4, zero_stage=3, node=8)
    m = min(r["devices"] for r in rows)  # the first whole node doubled (8 x 2^k) at or above the exact fewest
    assert n <= m < 2 * n and (m // 8) & (m // 8 - 1) == 0 and rows[0]["utilization"] == 0.4
    assert all(r["devices"] % 8 == 0 for r in rows)
    code, _, err = _cli(capsys, "--params", "7B", "--tokens", "1T", "--days", "9", "--own", "33819,5")
    assert code == 2 and "--usd-per-kwh" in err


def test_devices_for_a_job_keyed_prior_is_the_fewest_that_meet_the_deadline():
    """utilization "prior:job": utilization grows as devices^b, so the closed form is
    n = (hours·n at a reference / (T · ref^-b))^(1/(1+b)); each case's answer meets the deadline
    and one device fewer does not (checked with a Budget at each count)."""
    from trainbudget.calc.prior import utilization as prior
    h200 = "H200 SXM, BF16 tensor core, dense"
    assert prior.coefficients().devices_exponent > 0
    job = calc.job(params=70e9, tokens=15e12, device=h200, utilization="prior:job")
    three = inverse.devices_for(job, 90.0, case=None, memory=False)
    for k, case in enumerate(inverse.CASES):
        def hours(m, case=case):
            return float(inverse.pick(calc.budget(job.with_(devices=float(m))).hours, case))
        assert hours(three[k]) <= 90 * 24 < hours(three[k] - 1)
    node8 = inverse.devices_for(job, 90.0, node=8, memory=False)
    assert node8 % 8 == 0 and node8 - 8 < three[1] <= node8


def test_tokens_for_a_job_keyed_prior_spend_at_most_the_budget():
    """Cost grows as tokens^(1 - c) under a job-keyed prior; the answer is within the budget and
    a thousandth more tokens is not."""
    h200 = "H200 SXM, BF16 tensor core, dense"
    job = calc.job(params=70e9, tokens=15e12, device=h200, devices=1024, utilization="prior:job", price=3.0)
    three = inverse.tokens_for(job, 1e7, case=None)
    assert three[0] < three[1] < three[2]
    for k, case in enumerate(inverse.CASES):
        at = {"low": "high", "high": "low"}.get(case, case)
        def cost(d, at=at):
            return float(inverse.pick(calc.budget(job.with_(tokens=float(d))).cost_usd, at))
        assert cost(three[k]) <= 1e7 < cost(three[k] * 1.001)
    assert inverse.tokens_for(job, 1e7, case="expected") == three[1]


@pytest.mark.parametrize(("changes", "words"), [
    ({"tokens": -5}, "tokens must be > 0"), ({"params": 0}, "params must be > 0"),
    ({"goodput": 1.5}, "goodput must be in"), ({"params": None}, "needs params"),
    ({"method": "lora", "trainable": 8e9}, "trainable must be at most params"), ({"method": "xx"}, "method must be"),
])
def test_a_plan_question_refuses_its_numbers_when_made(changes, words):
    """A number every plan's Budget would refuse is refused once, naming it, when the question is made
    (not as a note on every device and offering)."""
    asked = {"tokens": 1e12, "days": 30, "params": 7e9, **changes}
    with pytest.raises(calc.TrainingBudgetError, match=words):
        plan.PlanQuestion(asked.pop("tokens"), asked.pop("days"), **asked)


def test_a_lora_plan_is_timed_by_the_step_and_a_qlora_plan_by_the_prior():
    """plan times LoRA on the step model (its base frozen), so a LoRA count costs what its step takes;
    QLoRA, which the step does not time, keeps the prior's utilization and says why."""
    ask = dict(model=calc.model_preset("Llama 3.1 8B"), devices=[H100], price="aws:on_demand", global_batch=64,
               seq_len=4096)
    lora = plan.rank_plans(plan.PlanQuestion(1e8, 1, method="lora", **ask))[0]
    assert lora.budget.step is not None and "LoRA: the base frozen" in lora.budget.utilization_basis
    full = plan.rank_plans(plan.PlanQuestion(1e8, 1, **ask))[0]
    assert lora.paid() < full.paid()  # a cheaper step: no weight gradients
    qlora = plan.rank_plans(plan.PlanQuestion(1e8, 1, method="qlora", **ask))[0]
    assert qlora.budget.step is None and "does not time a qlora fine-tune" in qlora.note
