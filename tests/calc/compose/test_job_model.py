"""calc.job(model=...) takes a preset's name and refuses another model or a model given with active params."""

import dataclasses

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.compose.parts import Cluster, Parallel


def test_job_takes_a_preset_name():
    by_name = calc.budget(calc.job(model="mixtral 8x7b "))
    by_preset = calc.budget(calc.job(model=calc.model_preset("Mixtral 8x7B")))
    assert by_name.job.model.preset is by_preset.job.model.preset
    assert (by_name.params, by_name.active_params, by_name.flops) == (by_preset.params, by_preset.active_params,
                                                                      by_preset.flops)
    assert calc.job(model="Mistral 7B").with_(tokens=2e9).model.preset.name == "Mistral 7B"


@pytest.mark.parametrize(("model", "words"), [("Mixtral 9x7B", "model must be one of .*got 'Mixtral 9x7B'"),
                                              (7e9, "model must be a preset name .*got 7000000000 of type float"),
                                              ({"name": "x"}, "model must be a preset name")])
def test_job_refuses_another_model(model, words):
    with pytest.raises(calc.TrainingBudgetError, match=words):
        calc.budget(calc.job(model=model))


def test_a_model_with_active_params_is_refused():
    with pytest.raises(calc.TrainingBudgetError, match="give active_params with params, not with a model"):
        calc.budget(calc.job(model="Mixtral 8x7B", active_params=5e9))


@pytest.mark.parametrize("names", [
    {},
    {"params": 13e9, "tokens": 1e12, "device": "H100 SXM, BF16 tensor core, dense", "devices": 64, "tp": 2,
     "zero_stage": 3, "utilization": "prior", "price": 2.5, "pue": 1.2},
    {"model": "Llama 3.1 8B", "seq_len": 8192, "recompute": "full", "method": "lora", "name": "x", "goodput": 0.9},
    {"model": None, "params": 7e9, "activations": 1e9, "calibration": None, "table": None, "today": None},
    {"layout": Parallel(tp=4), "cluster": Cluster(devices=8), "tokens": 5e9},
    {"params": np.array([1e9, 2e9]), "devices": np.array([8.0, 16.0]), "ep": 1, "cp": 2},
])
def test_calc_job_builds_what_the_flat_table_says(names):
    """calc.job is written out from FLAT at import for speed: every part and field as the table
    groups them (Job(**_grouped(None, names)), the plain way), the defaults elsewhere."""
    from trainbudget.calc.compose import job as made

    fast, plain = calc.job(**names), made.Job(**made._grouped(None, names))
    for field in dataclasses.fields(plain):
        a, b = getattr(fast, field.name), getattr(plain, field.name)
        if dataclasses.is_dataclass(b):
            assert type(a) is type(b)
            for f in dataclasses.fields(b):
                assert np.array_equal(getattr(a, f.name), getattr(b, f.name)) or getattr(a, f.name) is getattr(
                    b, f.name), (field.name, f.name)
        else:
            assert a == b or a is b, field.name


def test_calc_job_shares_a_part_only_when_every_field_is_its_default():
    """A part left at its defaults is the Job's default part (frozen: one instance serves every
    job); a field given, even one equal to its default but not the same object, makes a part."""
    from trainbudget.calc.compose import job as made

    plain = calc.job(params=7e9)
    assert plain.training is made.TRAINING and plain.layout is made.LAYOUT and plain.pricing is made.PRICING
    assert plain.model is not made.MODEL and plain.model.params == 7e9
    tp = calc.job(tp=2).layout
    assert tp is not made.LAYOUT and tp.tp == 2 and tp.pp == made.LAYOUT.pp
    method = "".join(["fu", "ll"])  # equal to the default text, another object
    given = calc.job(method=method).training
    assert given is not made.TRAINING and given.method == "full"


def test_calc_job_refuses_what_it_does_not_know():
    with pytest.raises(TypeError, match="no field 'foo'"):
        calc.job(foo=1)
    with pytest.raises(TypeError, match="no field 'layout'"):
        calc.job(layout={"tp": 2})
    with pytest.raises(TypeError, match="give layout whole or by its fields"):
        calc.job(layout=Parallel(tp=2), tp=4)


def test_the_batch_defaults_are_worded_only_where_taken():
    """A layout names the defaults it takes: both, the sequence length alone (a batch given in tokens),
    or the sequences (a length given); none when it gives both."""
    assert Parallel().defaults_used().startswith("default batch: 1,024 sequences of 4,096 tokens (")
    given = Parallel(global_batch_tokens=3 * 4096).defaults_used()
    assert given.startswith("default sequence length: 4,096 tokens (") and "sequences" not in given
    assert Parallel(seq_len=8192).defaults_used().startswith("default batch: 1,024 sequences of 8,192 tokens")
    assert Parallel(seq_len=8192, global_batch_tokens=8192).defaults_used() == ""
