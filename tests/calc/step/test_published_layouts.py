"""Where fit, ranked by the step model (calc.fit_layouts + calc.layout_steps + calc.layouts_by_speed, as
`trainbudget fit` ranks), puts the layouts practitioners published for five jobs.

The goal is the published layout among the first 10. Where the model does not reach it, the bound asserted
is the tightest one it reaches today, so a change that ranks a published layout worse fails here:
- LoRA on one 8-GPU node: data parallel 8 (the usual single-node fine-tune): first 10.
- Llama 3.1 8B pretraining in FSDP on 8 H100 (torchtitan, benchmarks/llama3_h100_202412_torchtitan.md:
  FSDP 8, local batch 2 of 8,192 tokens): first 10.
- The same on 128 H100: pure data parallel 128 is first; its ZeRO-3 (FSDP) row is within 110 (88th), behind
  ZeRO-1/2 and tensor/pipeline splits that avoid the recompute FSDP needs at micro-batch 2.
- Llama 3.1 405B, TP8 PP16 DP128 on 16,384 H100 at 16M tokens a step, 8K sequences (arXiv:2407.21783
  Table 4): 14th of 3,536, at ZeRO 2, VPP 8 and no recompute, 3% behind the first (TP4 PP16 CP4) and
  0.02% behind the 12th; TP8 PP16 (the planner issue's goal: among fit's first 10) is 3rd, with CP 2.
  It fits because the first stage holds 7 of the 126 layers, as Meta split them (calc.physics.stages);
  with ceil(126/16) = 8 there it needed full recompute and was 544th.
- DeepSeek-V3, PP16 EP64 on 2,048 H800 (arXiv:2412.19437 s.3.2; batch 15,360 sequences of 4K, s.4.2):
  within 2,500 of about 43,000 (2,342nd; DualPipe's overlap of the all-to-all is not modelled).
- Llama 3.1 70B in FSDP over 256 TPU v6e (MaxText tpu-recipes llama3_1_70b_8192, 1,024 sequences of 8K):
  fit lists it with the recipe's host offload of layer inputs (recompute "offload"; at full recompute it
  needs 32.6 GiB of the chip's 29 usable), at micro-batch 1: within 150 (146th); the step model ranks TP4
  PP16 CP2 first (1,069 tokens/s against FSDP's 928). The recipe's micro-batch 4, timed by the step model,
  would place within 60 (49th).
"""

from __future__ import annotations

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc import step as S  # noqa: N812
from trainbudget.calc.compose.step_terms import shape_of

H100 = "H100 SXM, BF16 tensor core, dense"


def _ranked(model: str, device: str, devices: int, **kw: object) -> tuple[calc.Layouts, np.ndarray, np.ndarray]:
    """fit's layouts, their order by the step model and each one's predicted tokens/s per device."""
    found = calc.fit_layouts(model, device, devices, **kw)
    st = calc.layout_steps(found, calc.model_preset(model), device, int(kw["seq_len"]))
    return found, np.asarray(calc.layouts_by_speed(st)), np.asarray(st.tokens_per_second_per_device)


def _rank(found: calc.Layouts, order: np.ndarray, **published: int) -> int:
    """1-based place of the first row in speed order with the published degrees."""
    hit = np.ones(len(found), dtype=bool)
    for name, value in published.items():
        hit &= np.asarray(getattr(found, name)) == value
    places = np.flatnonzero(hit[order])
    assert places.size, f"fit lists no layout with {published}"
    return int(places[0]) + 1


@pytest.mark.parametrize(("model", "device", "devices", "kw", "published", "bound"), [
    ("Llama 3.1 8B", H100, 8, {"seq_len": 4096, "global_batch": 64, "method": "lora"},
     {"tp": 1, "pp": 1, "cp": 1, "dp": 8}, 10),
    ("Llama 3.1 8B", H100, 8, {"seq_len": 8192, "global_batch": 16},
     {"tp": 1, "pp": 1, "cp": 1, "dp": 8, "zero_stage": 3}, 10),
    ("Llama 3.1 8B", H100, 128, {"seq_len": 8192, "global_batch": 256},
     {"tp": 1, "pp": 1, "cp": 1, "dp": 128}, 10),
    ("Llama 3.1 8B", H100, 128, {"seq_len": 8192, "global_batch": 256},
     {"tp": 1, "pp": 1, "cp": 1, "dp": 128, "zero_stage": 3}, 110),
    ("Llama 3.1 405B", H100, 16384, {"seq_len": 8192, "global_batch": 2048},
     {"tp": 8, "pp": 16, "cp": 1, "dp": 128}, 14),
    ("Llama 3.1 405B", H100, 16384, {"seq_len": 8192, "global_batch": 2048}, {"tp": 8, "pp": 16}, 10),
    ("DeepSeek-V3", "H800 SXM, BF16 tensor core, dense", 2048, {"seq_len": 4096, "global_batch": 15360},
     {"tp": 1, "pp": 16, "cp": 1, "ep": 64, "dp": 128}, 2500),
])
def test_published_layout_ranks_near_the_top(model, device, devices, kw, published, bound):
    found, order, _ = _ranked(model, device, devices, **kw)
    assert _rank(found, order, **published) <= bound


def test_maxtext_70b_fsdp_on_v6e_against_fits_rows():
    """fit lists the published FSDP-256 layout with the recipe's host offload of layer inputs (micro-batch
    1: at 4 the loss alone needs 12.6 GB a sequence at 12 B a logit); it ranks within the first 150 of fit's
    2,148 rows (146th), and the recipe's own micro-batch 4, timed by the step model, lands within the first
    60 (49th) and within 10% of MaxText's logged 948 tokens/s."""
    dev = "TPU v6e (Trillium), BF16, dense"
    found, order, tps = _ranked("Llama 3.1 70B", dev, 256, seq_len=8192, global_batch=1024)
    fsdp = (found.tp == 1) & (found.pp == 1) & (found.cp == 1)
    assert fsdp.any() and set(found.recompute[fsdp]) == {"offload"}
    assert _rank(found, order, tp=1, pp=1, cp=1, dp=256) <= 150
    lay = S.Layout(devices=256, seq_len=8192, global_batch_tokens=1024 * 8192, zero_stage=3, micro_batch=4,
                   recompute="full")
    ours = float(S.step_time(shape_of(calc.model_preset("Llama 3.1 70B")), lay, S.hardware(dev))
                 .tokens_per_second_per_device)
    assert ours == pytest.approx(948.1, rel=0.10)
    assert 1 + int(np.sum(tps > ours)) <= 60
    # fit's offload row is timed as full recompute (calc.physics.recompute.TIMED_AS)
    i = int(np.flatnonzero(fsdp)[0])
    at = S.Layout(devices=256, seq_len=8192, global_batch_tokens=1024 * 8192, zero_stage=float(found.zero_stage[i]),
                  micro_batch=float(found.micro_batch[i]), recompute="full")
    assert tps[i] == pytest.approx(float(S.step_time(shape_of(calc.model_preset("Llama 3.1 70B")), at,
                                                     S.hardware(dev)).tokens_per_second_per_device), rel=1e-12)
