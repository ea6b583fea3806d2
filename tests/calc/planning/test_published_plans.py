"""Five published jobs planned, against what their authors ran: the plan's structure (whole instances
doubled, the batch never exceeded, every count's devices split exactly, cost rising with the count)
holds for each; the layouts are checked where they are clearly right or wrong. Which layout comes
first is the step model's ranking (calc.layout_steps), so the layout checks that today's step model
does not yet meet are marked xfail with the reason, not left out.

Published layouts:
- Llama 3.1 405B: 16,384 H100, TP8 CP1 PP16 DP128, 16M tokens per step of 8,192-token sequences
  (Llama Team 2024, arXiv:2407.21783 §3.3.2 and Table 4); 30.84M H100-hours (model card), 78 days on
  16,384.
- Llama 3.1 70B on Cloud TPU v6e: MaxText's Llama 2 70B recipe on a v6e-256 slice in FSDP (TP1 PP1,
  https://github.com/AI-Hypercomputer/maxtext, benchmarks for v6e).
- DeepSeek-V3: 2,048 H800, PP16 EP64 spanning 8 nodes, ZeRO-1 data parallel, no TP (DeepSeek-AI 2024,
  arXiv:2412.19437 §3.2).
- A LoRA fine-tune of an 8B model on one 8-GPU node (Hu et al. 2021 arXiv:2106.09685; torchtune's
  llama3_1/8B_lora recipe runs on one node, data parallel).
- An 8B pretraining: torchtitan's Llama 3 8B on 8-128 H100s in FSDP, TP1 PP1 (Liang et al. 2024,
  arXiv:2410.06511 Table 2).
"""

from __future__ import annotations

import itertools

import pytest

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"
H800 = "H800 SXM, BF16 tensor core, dense"
V6E = "TPU v6e (Trillium), BF16, dense"

# name: (rank_plans arguments, the published layout's devices, TP, PP, EP)
JOBS = {
    "llama-405b": (dict(tokens=15.6e12, days=90, model="Llama 3.1 405B", devices=[H100], price="aws:on_demand",
                        global_batch=2048, seq_len=8192), 16384, 8, 16, 1),
    "llama-70b-v6e": (dict(tokens=0.5e12, days=60, model="Llama 3.1 70B", devices=[V6E], price="gcp:on_demand",
                           global_batch=1024, seq_len=8192), 256, 1, 1, 1),
    "deepseek-v3": (dict(tokens=14.8e12, days=60, model="deepseek-v3", devices=[H800], price="2.0", node=8,
                         global_batch=15360, seq_len=4096), 2048, 1, 16, 64),
    "lora-8b": (dict(tokens=1e8, days=1, model="Llama 3.1 8B", devices=[H100], price="aws:on_demand",
                     method="lora", global_batch=64, seq_len=4096), 8, 1, 1, 1),
    "pretrain-8b": (dict(tokens=1e12, days=14, model="Llama 3.1 8B", devices=[H100], price="aws:on_demand",
                         global_batch=512, seq_len=8192), 128, 1, 1, 1),
}


@pytest.fixture(scope="module")
def planned():
    out = {}
    for name, (args, *_ ) in JOBS.items():
        a = dict(args)
        out[name] = calc.rank_plans(calc.PlanQuestion(a.pop("tokens"), a.pop("days"),
                                                        **{**a, "model": calc.model_preset(a["model"])}))
    return out


@pytest.mark.parametrize("name", JOBS)
def test_every_plan_is_whole_instances_within_the_global_batch(planned, name):
    args = JOBS[name][0]
    plans = [p for p in planned[name] if p.feasible]
    assert plans, f"{name}: no feasible plan"
    step = 8 if args["devices"][0] in (H100, H800) else 1  # an HGX node (p5.48xlarge; --node 8 for H800)
    slices = (1, 4, 8, 16, 32, 64, 128, 256)  # v6e slices (calc/data/tpu_slices.csv), then 256 x 2^k
    for p in plans:
        r, n = p.row(), int(p.devices)
        assert n % step == 0 and n <= calc.max_plan_devices()
        if args["devices"][0] == V6E:
            assert n in slices or (n % 256 == 0 and (n // 256) & (n // 256 - 1) == 0)
        assert r["tp"] * r["pp"] * r["cp"] * r["dp"] == n
        assert r["dp"] * r["micro_batch"] * r["accumulation"] == args["global_batch"]  # never beyond the batch
        assert (r["dp"] * r["cp"]) % r["ep"] == 0


@pytest.mark.parametrize("name", JOBS)
def test_at_one_device_and_price_more_devices_never_cost_less(planned, name):
    by_price: dict[str, list[calc.Plan]] = {}
    for p in planned[name]:
        if p.feasible:
            by_price.setdefault(p.price_label, []).append(p)
    for plans in by_price.values():
        plans.sort(key=lambda p: p.devices)
        costs = [p.figure("cost_usd") for p in plans]
        days = [p.figure("days") for p in plans]
        assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(costs))
        assert all(b < a for a, b in itertools.pairwise(days))  # and each larger count is faster


def test_a_lora_fine_tune_of_an_8b_model_is_one_node(planned):
    top = calc.plan_headline(planned["lora-8b"])
    assert top["cheapest"].devices == 8 and top["fewest"].devices == 8  # one p5.48xlarge
    r = top["cheapest"].row()
    assert r["tp"] <= 2 and r["tp"] * r["pp"] <= 4  # an 8B model: no deep model parallelism


def _published_count_or_nearest(plans: list[calc.Plan], devices: int) -> calc.Plan:
    feasible = [p for p in plans if p.feasible]
    return min(feasible, key=lambda p: (abs(p.devices - devices), p.paid()))


# Which layouts the step model ranks first today: a check it does not yet meet is expected to fail, with
# what it proposes instead (strict: a pass is reported, so the marker goes when the model gets there).
# None today: DeepSeek-V3 (PP16 EP16 CP2 at 4,096 H800), Llama 3.1 70B on v6e (FSDP over 256 chips once a
# TP group's collectives run over one ICI axis, calc.step.hardware's scale_up_axis_GBps) and the rest pass.
STEP_RANKING: dict[str, str] = {}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=STEP_RANKING[n], strict=True))
                                  if n in STEP_RANKING else n for n in JOBS])
def test_the_layout_is_near_what_its_authors_ran(planned, name):
    """TP, PP and EP within a factor of 2 of the published degrees (x4 for EP), on the plan nearest the
    published count."""
    _, devices, tp, pp, ep = JOBS[name]
    r = _published_count_or_nearest(planned[name], devices).row()
    assert tp / 2 <= r["tp"] <= max(2, tp * 2)
    assert pp / 2 <= r["pp"] <= max(2, pp * 2)
    assert ep / 4 <= r["ep"] <= max(1, ep * 4)
