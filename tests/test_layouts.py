"""fit_layouts: every layout that fits, none that does not, each figure equal to calc's own."""

import itertools

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.layouts import fit_layouts
from trainbudget.calc.models import model_preset

H100 = "H100 SXM, BF16 tensor core, dense"
GIB = 2 ** 30


def _brute_force(name, devices, cap):
    """Loop over every (t, p, e, z) by hand and keep those under `cap` bytes."""
    shape = model_preset(name).shape
    b = calc.model_params(**shape)
    moe = shape.get("n_experts", 1) > 1
    kept = set()
    for t, p, e, z in itertools.product(range(1, devices + 1), range(1, devices + 1),
                                        range(1, shape.get("n_experts", 1) + 1), range(4)):
        if (devices % (t * p) or shape["n_heads"] % t or shape["n_kv_heads"] % t
                or shape["n_layers"] % p or (devices // (t * p)) % e
                or shape.get("n_experts", 1) % e):
            continue
        act = calc.activation_bytes(shape["n_layers"], shape["d_model"], shape["n_heads"], 4096, 1,
                                    recompute="selective", tensor_parallel=t, sequence_parallel=True,
                                    flash_attention=True, pipeline_parallel=p, vocab=shape["vocab"])
        total = calc.train_bytes(b.total, zero_stage=z, devices=devices, tensor_parallel=t,
                                 pipeline_parallel=p, expert_parallel=e,
                                 expert_params=b.experts if moe else 0.0,
                                 stage_params=shape["vocab"] * shape["d_model"],
                                 zero3_buffers=True, activations=act)
        if total <= cap and (devices // (t * p) > 1 or z == 0):  # ZeRO needs data parallelism
            kept.add((t, p, e, devices // (t * p), z, total))
    return kept


@pytest.mark.parametrize(("name", "devices"), [("Llama 3.1 70B", 32), ("Mixtral 8x7B", 16)])
def test_fit_equals_a_brute_force_loop(name, devices):
    got = fit_layouts(name, H100, devices)
    want = _brute_force(name, devices, 80 * GIB)
    rows = {(r["tensor"], r["pipeline"], r["expert"], r["data"], r["zero"]): r["total"]
            for r in got.rows()}
    assert set(rows) == {k[:5] for k in want}
    for k in want:
        assert rows[k[:5]] == pytest.approx(k[5], rel=1e-12)
    assert (got.headroom >= 0).all() and np.all(np.diff(got.total) >= 0)
    parts = got.weights + got.gradients + got.optimizer + got.master + got.activations
    assert parts == pytest.approx(got.total)


def test_a_model_too_big_for_few_devices_has_no_layout():
    assert len(fit_layouts("Llama 3.1 405B", H100, 8)) == 0
    assert len(fit_layouts("Llama 3.1 405B", H100, 1024)) > 0


def test_layout_constraints_hold():
    got = fit_layouts("Llama 3.1 405B", H100, 16384)
    assert np.all(128 % got.tensor == 0) and np.all(8 % got.tensor == 0)
    assert np.all(126 % got.pipeline == 0)
    assert np.all(got.tensor * got.pipeline * got.data == 16384)


def test_published_totals_only_model_is_refused():
    with pytest.raises(calc.TrainingBudgetError, match="no standard shape"):
        fit_layouts("DeepSeek-V3", H100, 2048)


def test_bad_arguments_name_themselves():
    with pytest.raises(calc.TrainingBudgetError, match="zero_stages"):
        fit_layouts("Llama 3.1 8B", H100, 8, zero_stages=(4,))
    with pytest.raises(calc.TrainingBudgetError, match="context_parallel must divide devices"):
        fit_layouts("Llama 3.1 8B", H100, 8, context_parallel=3)
    with pytest.raises(calc.TrainingBudgetError, match="devices must be a whole number"):
        fit_layouts("Llama 3.1 8B", H100, 0)


def test_catalog_memory_is_binary_and_devices_needed_uses_physical_bytes():
    tpu = calc.catalog().get("TPU v4, BF16, dense")
    assert tpu.memory_gib * GIB == pytest.approx(34.36e9, rel=1e-3)
    # 70B, ZeRO-3: 16 B/param sharded over n; 80 GiB per H100 holds 1120e9 / 85.9e9 -> 14
    assert calc.devices_needed(70e9, H100, zero_stage=3) == np.ceil(70e9 * 16 / (80 * GIB))
    assert calc.devices_needed(70e9, H100, zero_stage=3, memory_gib=80) == np.ceil(70e9 * 16 / (80 * 2**30))


def test_devices_needed_on_a_layout_is_a_whole_number_of_replicas():
    n = calc.devices_needed(405e9, H100, zero_stage=2, tensor_parallel=8, pipeline_parallel=2,
                            activations=20e9)
    assert n % 16 == 0 and n > 16
    fits = calc.train_bytes(405e9, zero_stage=2, devices=n, tensor_parallel=8, pipeline_parallel=2,
                            activations=20e9)
    assert fits <= 80 * GIB
    assert calc.train_bytes(405e9, zero_stage=2, devices=n - 16, tensor_parallel=8,
                            pipeline_parallel=2, activations=20e9) > 80 * GIB
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
from pathlib import Path  # noqa: E402

from tests.conftest import run_cli  # noqa: E402

QWEN = str(Path(__file__).parent / "data" / "configs" / "Qwen3-30B-A3B.json")


def test_fit_json_lists_what_calc_lists():
    proc = run_cli("fit", "--model", "Llama 3.1 70B", "--devices", "64", "--json", check=True)
    data = json.loads(proc.stdout)
    want = fit_layouts("Llama 3.1 70B", H100, 64).rows()
    assert data["layouts"] == want and data["memory_bytes"] == 80 * GIB


def test_fit_text_and_config():
    out = run_cli("fit", "--config", QWEN, "--devices", "16", "--limit", "3", check=True).stdout
    assert out.startswith("Qwen3-30B-A3B on 16 x H100")
    assert len(out.splitlines()) == 2 + 3 + 1


def test_estimate_with_a_moe_model_uses_active_params_for_flops_and_total_for_memory():
    proc = run_cli("estimate", "--model", "Mixtral 8x7B", "--tokens", "1T", "--devices", "64",
                   "--tp", "2", "--ep", "8", "--device", H100, "--json", check=True)
    (report,) = json.loads(proc.stdout)["rows"]  # --json prints JSON alone: one row per device
    b = model_preset("Mixtral 8x7B").params()
    assert report["flops"] == pytest.approx(calc.train_flops(b.total, 1e12, active_params=b.active))
    mem = calc.train_memory(b.total, devices=64, tensor_parallel=2, expert_parallel=8,
                            expert_params=b.experts, stage_params=32000 * 4096)
    assert report["memory_per_device_gib"] * 2**30 == pytest.approx(mem.total)
    assert report["data_parallel"] == 32


@pytest.mark.parametrize(("args", "message"), [
    (("estimate", "--tp", "3", "--devices", "8"), "devices must be divisible by tensor_parallel"),
    (("estimate", "--model", "Llama 3.1 8B", "--config", QWEN), "give --model or --config"),
    (("fit", "--devices", "8"), "fit needs --model NAME or --config FILE"),
    (("fit", "--model", "DeepSeek-V3", "--devices", "64"), "no standard shape"),
])
def test_cli_errors_are_one_line_exit_2(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# --- native Excel forms of this functions, recalculated by LibreOffice --------------
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
               "micro_batch": int(rng.integers(1, 4)), "recompute": str(rng.choice(["none", "selective", "full"])),
               "tensor_parallel": int(rng.choice([1, 2, 8])), "sequence_parallel": bool(rng.random() < 0.5),
               "flash_attention": bool(rng.random() < 0.5)}
        cases += [("MODEL_PARAMS", shape), ("MODEL_ACTIVE_PARAMS", shape),
                  ("TRAIN_LAYOUT_BYTES", layout), ("TRAIN_ACTIVATION_BYTES", act)]
    return cases


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


def test_fit_activations_equal_train_memory_given_the_shape():
    """train_memory's shape arguments give fit_layouts' activations on every layout that fits."""
    shape = calc.models.model_preset("Llama 3.1 70B").shape
    rows = calc.fit_layouts("Llama 3.1 70B", "H100 SXM, BF16 tensor core, dense", 64)
    assert rows.tensor.size > 0
    m = calc.train_memory(70e9, devices=64, tensor_parallel=rows.tensor, pipeline_parallel=rows.pipeline,
                          sequence_parallel=True, flash_attention=True, recompute="selective",
                          n_layers=shape["n_layers"], d_model=shape["d_model"], n_heads=shape["n_heads"],
                          seq_len=4096, micro_batch=1, vocab=shape["vocab"])
    np.testing.assert_allclose(m.activations, rows.activations, rtol=1e-12)
