"""fit_layouts: every layout that fits, none that does not, each figure equal to calc's own."""

import itertools

import numpy as np
import pytest

from tests.conftest import DATA
from trainbudget import calc
from trainbudget.calc.model import shapes as calc_models
from trainbudget.calc.model.shapes import model_preset
from trainbudget.calc.physics.fit import fit_layouts

CONFIGS = DATA / "configs"

H100 = "H100 SXM, BF16 tensor core, dense"
GIB = 2 ** 30


USABLE_H100 = 80 * GIB - 4 * GIB  # 80 GiB less the reserve: the larger of 3 GiB and 5% (calc/capacity.py)


def _brute_force(name, devices, cap):
    """Loop over every (t, p, v, e, z) by hand (full recompute, micro-batch 1, no context
    parallelism) and keep those under `cap` bytes."""
    shape = model_preset(name).shape
    b = calc.model_params(**shape)
    L, moe = shape["n_layers"], shape.get("n_experts", 1) > 1
    opts = {"n_kv_heads": shape["n_kv_heads"], "head_dim": shape["head_dim"], "ffn_dim": shape["ffn_dim"],
            "gated_mlp": True, "dropout": False}
    if moe:
        opts.update(n_experts=shape["n_experts"], top_k=shape["top_k"], moe_ffn_dim=shape["moe_ffn_dim"])
    kept = set()
    for t, p, v, e, z in itertools.product(range(1, devices + 1), range(1, devices + 1), range(1, 9),
                                           range(1, shape.get("n_experts", 1) + 1), range(4)):
        if (devices % (t * p) or shape["n_heads"] % t or shape["n_kv_heads"] % t or p > L
                or (devices // (t * p)) % e or shape.get("n_experts", 1) % e):
            continue
        stage = -(-L // p)  # the busiest stage holds ceil(L / p) layers
        if v > 1 and (p == 1 or stage % v):
            continue
        def act_at(layers, t=t, p=p, v=v):
            return calc.activation_bytes(layers, shape["d_model"], shape["n_heads"], 4096, 1, recompute="full",
                                         tensor_parallel=t, sequence_parallel=True, flash_attention=True,
                                         pipeline_parallel=p, vocab=shape["vocab"], virtual_stages=v, **opts)
        # the busiest device's layers x micro-batches in flight (device d keeps p - d), linear between the
        # splits of floor(L / p) and ceil(L / p) layers on every stage
        peak = max(n * (p - d) for d, n in enumerate(calc.stage_layers(L, p)))
        low = (L // p) * p
        act = act_at(stage * p) if stage * p == low else (
            act_at(low) + (act_at(stage * p) - act_at(low)) * (peak - low) / (stage * p - low))
        scale = stage * p / L
        emb = shape["vocab"] * shape["d_model"]
        total = calc.train_bytes(emb + (b.total - emb) * scale, zero_stage=z, devices=devices,
                                 tensor_parallel=t, pipeline_parallel=p, expert_parallel=e,
                                 expert_params=b.experts * scale if moe else 0.0, stage_params=emb,
                                 grad_bytes=4, zero3_buffers=True, activations=act)
        if total <= cap and (devices // (t * p) > 1 or z == 0):  # ZeRO needs data parallelism
            kept.add((t, p, v, e, devices // (t * p), z, total))
    return kept


@pytest.mark.parametrize(("name", "devices"), [("Llama 3.1 70B", 32), ("Mixtral 8x7B", 16)])
def test_fit_equals_a_brute_force_loop(name, devices):
    got = fit_layouts(name, H100, devices, recompute="full", micro_batch=1, context_parallel=1)
    want = _brute_force(name, devices, USABLE_H100)
    rows = {(r["tp"], r["pp"], r["vpp"], r["ep"], r["dp"], r["zero_stage"]): r["total_bytes"]
            for r in got.rows()}
    assert set(rows) == {k[:6] for k in want}
    for k in want:
        assert rows[k[:6]] == pytest.approx(k[6], rel=1e-12)
    assert (got.headroom_bytes >= 0).all()
    parts = got.weights_bytes + got.gradients_bytes + got.optimizer_bytes + got.master_bytes + got.activations_bytes
    assert parts == pytest.approx(got.total_bytes)


def test_ranking_is_the_stated_rule():
    got = fit_layouts("Llama 3.1 70B", H100, 64, seq_len=8192)
    cost = np.array([("none", "selective", "op", "full", "offload").index(r) for r in got.recompute])
    assert {"none", "op", "full"} <= set(got.recompute) <= {"none", "op", "full", "offload"}  # with FlashAttention
    keys = list(zip(got.tp * got.pp * got.cp, cost, -got.micro_batch, got.zero_stage, got.vpp,
                    got.total_bytes, strict=True))
    assert keys == sorted(keys) and len(keys) > 100


V6E = "TPU v6e (Trillium), BF16, dense"


def test_offload_is_listed_only_where_full_recompute_does_not_fit():
    """MaxText's v6e-256 Llama 3.1 70B recipe (FSDP over 256 chips, 8K, layer inputs offloaded to host):
    at TP1 PP1 full recompute's stored layer inputs (80 x 2 x 8,192 x 8,192 B a sequence) overflow the
    29 GiB a chip keeps; offloaded, the device holds one layer's input and fits. Every offload row is a
    layout where full recompute does not fit, with fewer activation bytes than full's."""
    got = fit_layouts("Llama 3.1 70B", V6E, 256, seq_len=8192, global_batch=1024)
    rows = got.rows()
    fsdp = [r for r in rows if (r["tp"], r["pp"], r["cp"]) == (1, 1, 1)]
    assert fsdp and {r["recompute"] for r in fsdp} == {"offload"} and all(r["dp"] == 256 for r in fsdp)
    key = ("tp", "pp", "vpp", "cp", "ep", "zero_stage", "micro_batch")
    full = {tuple(r[k] for k in key) for r in rows if r["recompute"] == "full"}
    offloaded = [r for r in rows if r["recompute"] == "offload"]
    assert offloaded and not any(tuple(r[k] for k in key) in full for r in offloaded)
    whole = fit_layouts("Llama 3.1 70B", V6E, 256, seq_len=8192, global_batch=1024, memory_gib=1e6, recompute=["full"])
    by = {tuple(r[k] for k in key): r["activations_bytes"] for r in whole.rows()}
    assert all(r["activations_bytes"] < by[tuple(r[k] for k in key)] for r in offloaded)
    # offload's layer inputs (80 layers, 1 sequence of 8,192 x 8,192 x 2 B) are the difference, less one layer
    one = min(fsdp, key=lambda r: r["micro_batch"])
    assert by[tuple(one[k] for k in key)] - one["activations_bytes"] == pytest.approx(79 * 2 * 8192 * 8192)


def test_nemo_llama3_70b_recipe_on_64_h100_is_listed():
    # NeMo llama3_70b.py / Megatron-Bridge llama3_70b_pretrain_64gpu_h100_bf16_config: TP4 PP4
    # VPP5 CP2, distributed Adam (ZeRO-1), fp32 main gradients, micro-batch 1, seq 8192
    got = fit_layouts("Llama 3.1 70B", H100, 64, seq_len=8192)
    rows = [r for r in got.rows() if (r["tp"], r["pp"], r["cp"], r["vpp"], r["zero_stage"],
                                      r["micro_batch"]) == (4, 4, 2, 5, 1, 1)]
    assert rows and rows[0]["dp"] == 2 and rows[0]["total_bytes"] <= USABLE_H100


def test_nvidia_405b_recipe_on_1024_h100_is_listed_with_uneven_stages():
    # Megatron-Bridge llama31_405b: TP8 PP8 CP2 on 1,024 H100 (126 layers over 8 stages)
    got = fit_layouts("Llama 3.1 405B", H100, 1024, seq_len=8192)
    rows = [r for r in got.rows() if (r["tp"], r["pp"], r["cp"]) == (8, 8, 2)]
    assert rows and {r["dp"] for r in rows} == {8}
    assert any(r["zero_stage"] == 1 and r["micro_batch"] == 1 for r in rows)
    assert 16 in set(got.pp.tolist())  # Meta's PP16, with 126 % 16 != 0


def test_a_model_too_big_for_few_devices_has_no_layout_but_a_nearest_miss():
    got = fit_layouts("Llama 3.1 405B", H100, 8)
    assert len(got) == 0 and got.nearest["total_bytes"] > got.memory_bytes and got.would_fit == ()
    assert got.devices_to_fit in (16, 32, 64, 128)
    assert len(fit_layouts("Llama 3.1 405B", H100, got.devices_to_fit)) > 0
    assert len(fit_layouts("Llama 3.1 405B", H100, got.devices_to_fit // 2)) == 0
    assert fit_layouts("Llama 3.1 405B", H100, 1024).devices_to_fit is None
    small = fit_layouts(str(CONFIGS / "Llama-3.2-1B.json"), H100, 1, memory_gib=10)
    assert len(small) == 0 and "H100 SXM" in small.would_fit and "RTX 4090" not in small.would_fit


def test_usable_memory_is_the_capacity_less_the_reserve_as_budget_counts_it():
    got = fit_layouts("Llama 3.1 8B", H100, 8)
    assert got.capacity_bytes == 80 * GIB and got.memory_bytes == USABLE_H100
    assert got.memory_bytes == calc.usable_bytes(H100)  # one rule: fit and budget agree
    assert fit_layouts("Llama 3.1 8B", H100, 8, reserve_gib=0).memory_bytes == 80 * GIB
    assert fit_layouts("Llama 3.1 8B", H100, 8, memory_gib=40, reserve_gib=1).memory_bytes == 39 * GIB
    assert fit_layouts("Llama 3.1 8B", H100, 8, memory_gib=40).memory_bytes == 37 * GIB  # 3 GiB > 5% of 40


def test_fp32_main_gradients_by_default_bf16_as_an_option():
    fp32 = fit_layouts("Llama 3.1 8B", H100, 8, zero_stages=(0,), recompute="full", micro_batch=1,
                       context_parallel=1)
    bf16 = fit_layouts("Llama 3.1 8B", H100, 8, zero_stages=(0,), recompute="full", micro_batch=1,
                       context_parallel=1, grad_bytes=2)
    assert fp32.gradients_bytes == pytest.approx(2 * fp32.weights_bytes)  # 4 B gradients, 2 B weights
    assert bf16.gradients_bytes == pytest.approx(bf16.weights_bytes)
    assert len(bf16) >= len(fp32)


def test_lora_and_qlora_fit_where_full_training_does_not():
    full = fit_layouts("Llama 3.1 70B", H100, 1)
    qlora = fit_layouts("Llama 3.1 70B", H100, 1, method="qlora")
    assert len(full) == 0 and len(qlora) > 0
    assert (qlora.weights_bytes < 70.6e9 * 0.6).all()
    fewer = fit_layouts("Llama 3.1 70B", H100, 1, method="qlora", trainable=20e6)
    assert fewer.gradients_bytes.max() < qlora.gradients_bytes.min()


def test_layout_constraints_hold():
    got = fit_layouts("Llama 3.1 405B", H100, 16384)
    assert np.all(128 % got.tp == 0) and np.all(8 % got.tp == 0)
    assert np.all(got.pp <= 126)
    assert np.all(got.tp * got.pp * got.cp * got.dp == 16384)
    stage = -(-126 // got.pp)
    assert np.all((got.vpp == 1) | (stage % got.vpp == 0))


def test_deepseek_v3_has_a_shape_and_fits_with_expert_parallelism():
    got = fit_layouts("DeepSeek-V3", H100, 2048, micro_batch=1)
    assert len(got) > 0 and np.all(256 % got.ep == 0)


def test_bad_arguments_name_themselves():
    with pytest.raises(calc.TrainingBudgetError, match="zero_stages"):
        fit_layouts("Llama 3.1 8B", H100, 8, zero_stages=(4,))
    with pytest.raises(calc.TrainingBudgetError, match="context_parallel must divide devices"):
        fit_layouts("Llama 3.1 8B", H100, 8, context_parallel=3)
    with pytest.raises(calc.TrainingBudgetError, match="devices must be a whole number"):
        fit_layouts("Llama 3.1 8B", H100, 0)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"devices": [8, 16]}, "devices must be one whole number"),
    ({"devices": 10 ** 20}, "devices must be at most 4,194,304"),
    ({"devices": 1e16}, "devices must be at most"),
    ({"devices": True}, "devices must be one whole number"),
    ({"zero_stages": "abc"}, "zero_stages must be among"),
    ({"zero_stages": [1.5]}, "zero_stages must be among"),
    ({"zero_stages": ()}, "zero_stages must name at least one value"),
    ({"recompute": "sometimes"}, "recompute must be one of"),
    ({"micro_batch": 0}, "micro_batch must be a whole number"),
    ({"reserve_gib": -1}, "reserve_gib must be"),
    ({"method": "inference"}, "method must be one of"),
    ({"loss": "chunky"}, "loss must be one of"),
    ({"sequence_parallel": "no"}, None),
])
def test_fit_arguments_are_checked(kwargs, message):
    args = {"devices": 8, **kwargs}
    n = args.pop("devices")
    if message is None:  # 'no' is False, not True (calc_checks.flag)
        off = fit_layouts("Llama 3.1 8B", H100, n, **args)
        on = fit_layouts("Llama 3.1 8B", H100, n, sequence_parallel=True)
        assert off.activations_bytes.max() > on.activations_bytes.max()
        return
    with pytest.raises(calc.TrainingBudgetError, match=message):
        fit_layouts("Llama 3.1 8B", H100, n, **args)


def test_catalog_memory_is_binary_and_devices_needed_uses_physical_bytes():
    tpu = calc.catalog().get("TPU v4, BF16, dense")
    assert tpu.memory_gib * GIB == pytest.approx(34.36e9, rel=1e-3)
    # 70B, ZeRO-3: 16 B/param sharded over n; 76 of an H100's 80 GiB are usable: 1120e9 / 81.6e9 -> 14
    assert calc.devices_needed(70e9, H100, zero_stage=3) == np.ceil(70e9 * 16 / (76 * GIB))
    assert calc.devices_needed(70e9, H100, zero_stage=3, memory_gib=80) == np.ceil(70e9 * 16 / (76 * 2**30))


def test_devices_needed_on_a_layout_is_a_whole_number_of_replicas():
    n = calc.devices_needed(405e9, H100, zero_stage=2, tensor_parallel=8, pipeline_parallel=2,
                            activations=20e9)
    assert n % 16 == 0 and n > 16
    fits = calc.train_bytes(405e9, zero_stage=2, devices=n, tensor_parallel=8, pipeline_parallel=2,
                            activations=20e9)
    assert fits <= calc.usable_bytes(H100)  # 76 GiB usable (calc/capacity.py)
    assert calc.train_bytes(405e9, zero_stage=2, devices=n - 16, tensor_parallel=8,
                            pipeline_parallel=2, activations=20e9) > calc.usable_bytes(H100)
    moe = calc.devices_needed(46.7e9, H100, zero_stage=1, expert_parallel=8, expert_params=45e9)
    assert moe % 8 == 0


def test_catalog_corrections():
    cat = calc.catalog()
    assert cat.get("Gaudi 3, BF16 matrix, dense").tflops == 1835
    assert "1,600 MHz" in cat.get("Gaudi 3, BF16 matrix, dense").note
    assert cat.get("B200, BF16 tensor core, dense").memory_tbps == 7.7
    assert cat.get("TPU v4, BF16, dense").watts == 192
    assert "PB-11133" in cat.get("H100 PCIe, BF16 tensor core, dense").source


def test_a_layout_whose_fixed_part_never_fits_needs_infinitely_many():
    # tp8 x pp2 of 405B under ZeRO-1: 2 + 2 B/param of 405e9/16 stay whole: > 80 GiB
    assert calc.devices_needed(405e9, H100, zero_stage=1, tensor_parallel=8,
                               pipeline_parallel=2) == np.inf


# --- command line ---------------------------------------------------------------------------
import json  # noqa: E402

from tests.conftest import invoke  # noqa: E402

QWEN = str(DATA / "configs" / "Qwen3-30B-A3B.json")


def test_fit_json_lists_what_calc_lists():
    proc = invoke("fit", "--model", "Llama 3.1 70B", "--devices", "64", "--json", check=True)
    data = json.loads(proc.stdout)
    found = fit_layouts("Llama 3.1 70B", H100, 64, global_batch=calc.DEFAULT_GLOBAL_BATCH)  # the CLI's default
    st = calc.layout_steps(found, calc.model_preset("Llama 3.1 70B"), H100, calc.DEFAULT_SEQ_LEN)
    rows = found.rows()
    want = [{**rows[i], "step_seconds": float(st.step_seconds[i]),
             "tokens_per_second_per_device": float(st.tokens_per_second_per_device[i]),
             "mfu": float(st.mfu[i])} for i in calc.layouts_by_speed(st)]  # fastest first
    assert data["layouts"] == want and data["memory_bytes"] == USABLE_H100
    assert data["ranking"] == calc.LAYOUT_RANKING


def test_fit_text_and_config():
    out = invoke("fit", "--config", QWEN, "--devices", "16", "--limit", "3", check=True).stdout
    assert out.startswith("Qwen3-30B-A3B on 16 x H100")
    assert len(out.splitlines()) == 4 + 3 + 1  # title, ranking rule, bytes basis, column heads; 3 rows; "... more"
    assert out.splitlines()[1].startswith("Ranked by the step model's tokens/s per device")


def test_estimate_with_a_moe_model_uses_active_params_for_flops_and_total_for_memory():
    proc = invoke("estimate", "--model", "Mixtral 8x7B", "--tokens", "1T", "--devices", "64",
                   "--tp", "2", "--ep", "8", "--device", H100, "--json", check=True)
    (report,) = json.loads(proc.stdout)["rows"]  # --json prints JSON alone: one row per device
    b = model_preset("Mixtral 8x7B").params()
    assert report["flops"] == pytest.approx(calc.train_flops(b.total, 1e12, active_params=b.active_with_embedding))
    mem = calc.train_memory(b.total, devices=64, tensor_parallel=2, expert_parallel=8,
                            expert_params=b.experts, stage_params=32000 * 4096)
    assert report["memory_per_device_gib"] * 2**30 == pytest.approx(mem.total)
    assert report["dp"] == 32


@pytest.mark.parametrize(("args", "message"), [
    (("estimate", "--tp", "3", "--devices", "8"), "devices must be divisible by tensor_parallel"),
    (("estimate", "--model", "Llama 3.1 8B", "--config", QWEN), "give --model or --config"),
    (("fit", "--devices", "8"), "fit needs --model NAME or --config FILE"),
    (("fit", "--model", "Llama 3.1 8B", "--devices", "8", "--limit", "-5"), "--limit must be a whole number >= 0"),
    (("fit", "--model", "Llama 3.1 8B", "--devices", "100000000000000000000"), "devices must be at most"),
    (("fit", "--model", "Llama 3.1 8B", "--devices", "1e16"), "devices must be at most"),
    (("fit", "--model", "", "--devices", "8"), "fit needs --model NAME or --config FILE"),
    (("fit", "--model", "Llama 3.1 8B", "--devices", "8", "--method", "lorax"), "method must be one of"),
])
def test_cli_errors_are_one_line_exit_2(args, message):
    proc = invoke(*args)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# --- native Excel forms of the layout functions, recalculated by LibreOffice --------------
def _native_cases():
    rng = np.random.default_rng(12)
    cases = []
    for _ in range(12):
        moe = rng.random() < 0.5
        shape = {"n_layers": int(rng.choice([24, 32, 48])), "d_model": int(rng.choice([2048, 4096])),
                 "n_heads": 32, "n_kv_heads": int(rng.choice([4, 8, 32])), "head_dim": 128,
                 "ffn_dim": int(rng.choice([11008, 14336])), "vocab": int(rng.choice([32000, 128256])),
                 "n_experts": int(rng.choice([8, 64])) if moe else 1, "top_k": 2 if moe else 1,
                 "moe_ffn_dim": int(rng.choice([768, 14336])), "n_shared_experts": int(moe and rng.random() < 0.5),
                 "dense_layers": int(moe and rng.random() < 0.5), "gated_mlp": bool(rng.random() < 0.8),
                 "tied_embeddings": bool(rng.random() < 0.3)}
        layout = {"params": float(10 ** rng.uniform(9, 11.5)), "devices": 64 * int(rng.integers(1, 9)),
                  "tensor_parallel": int(rng.choice([1, 2, 4, 8])), "pipeline_parallel": int(rng.choice([1, 2])),
                  "expert_parallel": int(rng.choice([1, 2, 4])), "zero_stage": int(rng.integers(0, 4)),
                  "optimizer": str(rng.choice(calc.OPTIMIZERS)), "grad_bytes": float(rng.choice([2.0, 4.0])),
                  "activations": float(10 ** rng.uniform(8, 10.5))}
        layout["expert_params"] = layout["params"] * 0.6 if moe else 0.0
        layout["stage_params"] = layout["params"] * 0.02
        act = {"n_layers": 32, "d_model": 4096, "n_heads": 32, "seq_len": int(rng.choice([2048, 8192])),
               "micro_batch": int(rng.integers(1, 4)),
               "recompute": str(rng.choice(calc.RECOMPUTE)),
               "tensor_parallel": int(rng.choice([1, 2, 8])), "sequence_parallel": bool(rng.random() < 0.5),
               "flash_attention": bool(rng.random() < 0.5), "pipeline_parallel": int(rng.choice([1, 2, 4])),
               "vocab": int(rng.choice([32000, 128256])), "micro_batches": int(rng.choice([1, 3, 8]))}
        flops = {"params": layout["params"], "tokens": float(10 ** rng.uniform(9, 13)), "n_layers": 32,
                 "d_model": 4096, "seq_len": act["seq_len"], "recompute": str(rng.choice(calc.RECOMPUTE))}
        cases += [("MODEL_PARAMS", shape), ("MODEL_ACTIVE_PARAMS", shape), ("TRAIN_LAYOUT_BYTES", layout),
                  ("TRAIN_ACTIVATION_BYTES", act), ("TRAIN_FLOPS", flops)]
    first = dict(reversed(cases))  # each function's first case, again with every recompute name
    return cases + [(f, {**first[f], "recompute": r}) for f in ("TRAIN_ACTIVATION_BYTES", "TRAIN_FLOPS")
                    for r in calc.RECOMPUTE]


def test_native_forms_equal_calc_in_libreoffice(soffice, tmp_path):
    import openpyxl

    from trainbudget.addin import libreoffice as engine
    from trainbudget.addin.functions import native
    from trainbudget.addin.functions.registry import BY_NAME

    cases = _native_cases()
    wb = openpyxl.Workbook()
    ws = wb.active
    for r, (name, values) in enumerate(cases, start=1):
        spec = BY_NAME[name]
        exprs = {a.name: native.excel_literal(values[a.name]) for a in spec.args if a.name in values}
        ws.cell(r, 1, "=" + spec.native_formula(exprs))
    wb.save(tmp_path / "native.xlsx")
    out = engine.convert([tmp_path / "native.xlsx"], "xlsx", tmp_path / "out")
    got = openpyxl.load_workbook(out[0], data_only=True).active
    for r, (name, values) in enumerate(cases, start=1):
        spec = BY_NAME[name]
        want = spec.call({a.name: values[a.name] for a in spec.args if a.name in values})
        assert got.cell(r, 1).value == pytest.approx(want, rel=1e-9), (name, values)


def test_fit_activations_are_activation_bytes_on_the_models_shape():
    """fit_layouts' activations are calc.activation_bytes with the preset's own widths."""
    shape = calc_models.model_preset("Llama 3.1 70B").shape
    rows = calc.fit_layouts("Llama 3.1 70B", H100, 64, recompute="none", micro_batch=1, context_parallel=1)
    assert rows.tp.size > 0
    even = 80 % rows.pp == 0
    want = calc.activation_bytes(80, 8192, 64, 4096, 1, recompute="none", tensor_parallel=rows.tp[even],
                                 sequence_parallel=True, flash_attention=True,
                                 pipeline_parallel=rows.pp[even], vocab=shape["vocab"],
                                 virtual_stages=rows.vpp[even], n_kv_heads=8, head_dim=128,
                                 ffn_dim=28672, gated_mlp=True, dropout=False)
    np.testing.assert_allclose(rows.activations_bytes[even], want, rtol=1e-12)


def test_fit_says_the_nearest_miss_and_where_it_would_fit(tmp_path):
    out = invoke("fit", "--config", str(CONFIGS / "Llama-3.2-1B.json"), "--devices", "1", "--memory-gib", "10",
                  check=True).stdout
    assert ": 0 layouts fit\n" in out and "nearest miss (" in out
    assert "that layout would fit on: " in out and "H100 SXM" in out
    need = fit_layouts(str(CONFIGS / "Llama-3.2-1B.json"), H100, 1, memory_gib=10).devices_to_fit
    assert need == 4 and f"on this device, {need} devices (--devices doubled) would hold a layout" in out


def test_fit_refuses_a_config_with_absurd_layers(tmp_path):
    data = json.loads((CONFIGS / "Llama-3.1-8B.json").read_text())
    data["num_hidden_layers"] = 10 ** 30
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    proc = invoke("fit", "--config", str(p), "--devices", "8")
    assert proc.returncode == 2 and "num_hidden_layers must be a whole number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fit_reads_a_latent_attention_config():
    got = fit_layouts(str(CONFIGS / "DeepSeek-V2-Lite.json"), H100, 8, micro_batch=1)
    assert len(got) > 0 and np.all(64 % got.ep == 0) and np.all(16 % got.tp == 0)
