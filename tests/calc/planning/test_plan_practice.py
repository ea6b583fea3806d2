"""A plan a practitioner would act on: offerings as they are sold (whole instances, no multi-node job
on a single-device offering, TPU slices), commitments costed as commitments, spot said, the team's
own rows (plan --catalog, estimate --range on a workbook's measured row, scenario layout columns),
layouts the global batch allows (fit and plan), and more devices never cheaper at one price."""

from __future__ import annotations

import csv
import itertools
import json
import shutil
from importlib import resources

import pytest

from tests.conftest import ROOT, run_cli
from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.compose.budget import budget
from trainbudget.calc.planning import offers, rank as plan
from trainbudget.calc.planning.scenarios import scenario_jobs

H100 = "H100 SXM, BF16 tensor core, dense"
V6E = "TPU v6e (Trillium), BF16, dense"
L70 = calc.model_preset("Llama 3.1 70B")


def _price_rows() -> list[dict[str, str]]:
    text = resources.files("trainbudget.calc").joinpath("data/prices.csv").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture(scope="module")
def catalog_plans():
    """Every catalog device and offering (spot too) for the issue's job: Llama 3.1 70B, 2T tokens, 30 days."""
    return plan.rank_plans(plan.PlanQuestion(2e12, 30, model=L70, spot=True))


# --- offerings as sold -------------------------------------------------------------------------

def test_counts_are_whole_instances_of_the_offering(catalog_plans):
    """Each plan's count is a multiple of its offering's devices_per_instance (read from prices.csv
    here), with no --node given: 8 for an HGX node, 4 for a GB200 NVL72 tray."""
    per = {f"{r['provider'].lower()}:{p} {r['offering']}": int(r["devices_per_instance"])
           for r in _price_rows() for p in ("on_demand", "1yr", "3yr", "spot") if r[f"usd_per_device_hour_{p}"]}
    seen = set()
    for p in catalog_plans:
        k = per.get(p.price_label)
        if k and k > 1 and p.budget is not None and "TPU" not in p.device:
            assert p.devices % k == 0, (p.price_label, p.devices)
            seen.add(k)
    assert {8, 4} <= seen


def test_a_single_device_offering_never_carries_a_multi_device_job(catalog_plans):
    singles = {f"{r['provider'].lower()}:{p} {r['offering']}" for r in _price_rows()
               for p in ("on_demand", "1yr", "3yr", "spot")
               if r[f"usd_per_device_hour_{p}"] and r["devices_per_instance"] == "1" and "TPU" not in r["device"]}
    on_single = [p for p in catalog_plans if p.price_label in singles]
    assert {"runpod:on_demand Community Cloud H100 SXM", "lambda:on_demand 1x H100 SXM",
            "gcp:3yr a3-highgpu-1g"} <= {p.price_label for p in on_single}
    assert all(not p.feasible and p.budget is None and "one device per instance" in p.note for p in on_single)
    small = plan.rank_plans(plan.PlanQuestion(1e9, 30, params=1e8, devices=[H100], utilization=0.4))  # a one-device job
    one = [p for p in small if p.price_label == "lambda:on_demand 1x H100 SXM"]
    assert one and one[0].devices == 1 and one[0].feasible


def test_tpu_counts_are_slice_shapes_sold(catalog_plans):
    """v6e is sold in slices of 1 to 256 chips (docs.cloud.google.com/tpu/docs/v6e), and beyond a pod
    as whole 256-chip slices (Multislice): never 1,102 or 8,816 chips."""
    sizes = offers.load_slices()["tpu v6e"]
    assert sizes == (1, 4, 8, 16, 32, 64, 128, 256)
    counts = {p.devices for p in catalog_plans if p.device == V6E and p.budget is not None}
    assert counts and all(n in sizes or n % 256 == 0 for n in counts)


def test_default_node_comes_from_the_offering(capsys):
    code, out, _ = _cli(capsys, "plan", "--model", "Llama 3.1 70B", "--tokens", "2T", "--days", "30", "--device", H100,
                        "--price", "lambda:on_demand:8x H100 SXM", "--json")
    data = json.loads(out)
    assert code == 0 and data["question"]["node"] is None
    assert all(r["devices"] % 8 == 0 for r in data["plans"])


# --- commitments and spot -----------------------------------------------------------------------

def test_a_commitment_is_costed_as_a_commitment(catalog_plans):
    termed = [p for p in catalog_plans if p.feasible and p.term_years]
    assert {1.0, 3.0} <= {p.term_years for p in termed}
    for p in termed:
        rate, hours = float(p.budget.usd_per_device_hour), p.figure("hours")
        term = p.term_years * 8760
        assert p.commitment() == pytest.approx(p.devices * rate * term * max(1, -(-hours // term)), rel=1e-12)
        assert p.paid() == p.commitment() > p.figure("cost_usd")
        assert p.row()["commitment_usd"] == p.commitment()
    paid = [p.paid() for p in catalog_plans if p.feasible]
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(paid))  # ranked by what is paid
    # the headline's cheapest is not a 3-year commitment of millions for a 30-day job
    top = plan.headline(catalog_plans)["cheapest"]
    assert not top.term_years


def test_committed_capacity_ranks_by_the_jobs_share(capsys):
    committed = plan.rank_plans(plan.PlanQuestion(2e12, 30, model=L70, devices=[V6E], committed=True))
    top = plan.headline(committed)["cheapest"]
    assert top.term_years == 3.0 and top.paid() == top.figure("cost_usd")  # 3yr: the cheapest hourly rate
    code, out, _ = _cli(capsys, "plan", "--model", "Llama 3.1 70B", "--tokens", "2T", "--days", "30", "--device", V6E,
                        "--committed")
    assert code == 0 and "3-year commitment on these devices is" in out.splitlines()[0]
    code, out, _ = _cli(capsys, "plan", "--model", "Llama 3.1 70B", "--tokens", "2T", "--days", "30", "--device", V6E,
                        "--limit", "60")
    assert code == 0 and "(3y)" in out and "whole commitment (devices x rate x 8,760 h a year" in out


def test_spot_is_left_out_unless_asked_and_the_output_says_which(capsys):
    default = plan.rank_plans(plan.PlanQuestion(2e12, 30, model=L70, devices=[H100]))
    assert not any(":spot " in p.price_label for p in default)
    spot = plan.rank_plans(plan.PlanQuestion(2e12, 30, model=L70, devices=[H100], spot=True))
    assert any(":spot " in p.price_label and p.feasible for p in spot)
    args = ("plan", "--model", "Llama 3.1 70B", "--tokens", "2T", "--days", "30", "--device", H100)
    code, out, _ = _cli(capsys, *args)
    assert code == 0 and "Spot prices: left out" in out and "coreweave:spot" not in out
    code, out, _ = _cli(capsys, *args, "--spot")
    assert code == 0 and "no preemption penalty" in out and "coreweave:spot" in out


# --- the team's own rows -------------------------------------------------------------------------

MEASURED = ("name,hardware,precision,tflops,kind,memory_gib,memory_tbps,watts,usd_per_device_hour,source,as_of,note\n"
            "Lab RTX 4090 bf16 (measured),RTX 4090,bf16,150,measured,24,1.0,450,0.5,team bench,2026-12-01,\n")


def test_plan_takes_a_catalog_with_a_measured_row(tmp_path, capsys):
    path = tmp_path / "devices.csv"
    path.write_text(MEASURED, "utf-8")
    code, out, err = _cli(capsys, "plan", "--catalog", str(path), "--device", "Lab RTX 4090 bf16 (measured)",
                          "--params", "1B", "--tokens", "20B", "--days", "30", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["plans"][0]["device"] == "Lab RTX 4090 bf16 (measured)" and data["plans"][0]["feasible"]


def test_estimate_range_ranges_a_workbooks_own_measured_row(tmp_path):
    """A row `measure` adds to a workbook (hardware of no known family) is ranged by the workbook's
    prior ("family of ... unknown"); estimate --range --catalog WORKBOOK ranges it too."""
    book = shutil.copyfile(ROOT / "workbook" / "TrainingBudget.xlsm", tmp_path / "book.xlsm")
    proc = run_cli("measure", "--backend", "numpy", "--seconds", "1", "--into", str(book), "--name", "Lab",
                   "--memory-gib", "64", "--watts", "120")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("estimate", "--range", "--catalog", str(book), "--device", "Lab", "--params", "1B")
    assert proc.returncode == 0, proc.stderr
    assert "(low / expected / high)" in proc.stdout and "family of Lab unknown" in proc.stdout


def test_scenarios_take_layout_columns_and_refuse_bad_cells_naming_the_row():
    base = calc.job(params=1.0, zero_stage=1, tp=2)
    rows = [{"name": "a", "model": "Llama 3.1 70B", "tokens": "1B", "device": H100, "devices": "64",
             "utilization": "0.4", "zero_stage": "3", "tp": "8", "pp": "2", "cp": "", "ep": "", "seq_len": "8192",
             "global_batch": "512"},
            {"name": "b", "model": "Llama 3.1 70B", "tokens": "1B", "device": H100, "devices": "64",
             "utilization": "0.4", "zero_stage": "", "tp": "", "pp": "", "cp": "", "ep": "", "seq_len": "",
             "global_batch": ""}]
    a, b = scenario_jobs(rows, base)
    assert (a.layout.zero_stage, a.layout.tp, a.layout.pp) == (3, 8, 2)
    assert (b.layout.zero_stage, b.layout.tp) == (1, 2)  # blank: the command line's
    assert budget(a).fits and not budget(b).fits  # a full fine-tune of 70B fits on 64 H100 only as laid out
    for cell, needle in ((("zero_stage", "4"), "zero_stage must be a whole number >= 0 and <= 3"),
                         (("tp", "1.5"), "tp must be a whole number >= 1"),
                         (("global_batch", "1001"),
                          "global_batch 1,001 sequences is not a whole number of steps of data parallel 4 ")):
        bad = dict(rows[0], **dict([cell]))
        with pytest.raises(calc.TrainingBudgetError, match="scenario 1: " + needle):
            list(scenario_jobs([bad], base))


# --- the global batch ------------------------------------------------------------------------

def test_fit_lists_only_layouts_the_batch_allows(capsys):
    code, out, _ = _cli(capsys, "fit", "--model", "Llama 3.1 405B", "--devices", "16384", "--global-batch", "2048",
                        "--seq-len", "8192", "--json")
    data = json.loads(out)
    assert code == 0 and data["global_batch_tokens"] == 2048 * 8192 and data["layouts"]
    assert all(r["dp"] * r["micro_batch"] * r["accumulation"] == 2048 for r in data["layouts"])
    assert not any(r["dp"] == 16384 for r in data["layouts"])  # the old first row: 268M tokens a step
    code, out, _ = _cli(capsys, "fit", "--model", "Llama 3.1 405B", "--devices", "16384", "--limit", "1")
    assert code == 0 and "global batch 1,024 sequences x 4,096 tokens = 4,194,304 tokens per step" in out
    assert "Ranked by the step model's tokens/s per device" in out


def test_plan_layouts_never_need_a_batch_beyond_the_global_batch(catalog_plans):
    laid = [p for p in catalog_plans if p.layout and p.layout.get("accumulation")]
    assert laid
    for p in laid:
        lay = p.layout
        assert lay["dp"] * lay["micro_batch"] * lay["accumulation"] == calc.DEFAULT_GLOBAL_BATCH
    h100 = [p for p in catalog_plans if p.device == H100 and p.feasible]
    assert all(p.layout["dp"] <= calc.DEFAULT_GLOBAL_BATCH for p in h100)  # no DP12352


# --- more devices never cost less ------------------------------------------------------------------

def test_more_devices_never_cost_less_at_one_device_and_price(catalog_plans):
    by: dict[tuple[str, str], list[plan.Plan]] = {}
    for p in catalog_plans:
        if p.feasible:
            by.setdefault((p.device, p.price_label), []).append(p)
    assert sum(len(v) > 1 for v in by.values()) >= 10
    for ps in by.values():
        ps.sort(key=lambda p: p.devices)
        for case in ("low", "expected", "high"):
            costs = [float(plan.pick(p.value("cost_usd"), case)) for p in ps]
            assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(costs))
