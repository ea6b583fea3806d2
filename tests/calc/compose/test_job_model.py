"""calc.job(model=...) takes a preset's name and refuses another model or a model given with active params."""

import pytest

from trainbudget import calc


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
