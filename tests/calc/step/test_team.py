"""A team's measured steps calibrate the step model: one factor per device, and the team's band.

The example team is torchtitan's published H100 FP8 runs (seven measured steps in the packaged
calc/data/steptime_measured.csv, one framework on one device), read here as a team's own file.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.step import team

FP8_H100 = "H100 SXM 96GB 500W, FP8 tensor core, dense"


def _packaged() -> list[dict[str, str]]:
    path = calc.__path__[0] + "/data/steptime_measured.csv"
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _csv(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    out = csv.DictWriter(buf, fieldnames=list(rows[0]))
    out.writeheader()
    out.writerows(rows)
    return buf.getvalue()


def _torchtitan() -> list[dict[str, str]]:
    rows = [r for r in _packaged() if team.team_of(r) == "torchtitan" and r["device"] == FP8_H100]
    assert len(rows) >= 5  # the example needs a team with several measured steps
    return rows


def test_a_team_of_published_rows_is_fitted_and_its_error_falls():
    cal = calc.calibrate_from_measured(_csv(_torchtitan()))
    assert list(cal.factors) == [FP8_H100] and cal.rows[FP8_H100] == len(_torchtitan())
    assert 0.5 < cal.factors[FP8_H100] < 1.5
    assert cal.error_after[FP8_H100] < cal.error_before[FP8_H100]
    assert FP8_H100 in cal.basis and not cal.capped


def test_a_held_out_step_is_predicted_better_from_the_teams_other_steps():
    """Leave-one-out inside the team: each step predicted with the factor fitted on the team's
    other steps misses by less (median) than the published runs' constants do."""
    steps = calc.load_team_steps(_csv(_torchtitan()))
    hw = calc.step_hardware(FP8_H100)
    idx = list(range(len(steps.measured)))
    loo = team._loo(steps, idx, hw, calc.STEP_CONSTANTS)
    default = team._predict(steps, idx, hw, calc.STEP_CONSTANTS) / np.array(steps.measured)
    assert np.median(np.abs(loo - 1)) < np.median(np.abs(default - 1))


def test_a_teams_band_is_the_published_teams_spread_on_its_devices_only():
    """A team's factor centers its predictions (the median test above); its band's fast end is tighter
    than the published runs' leave-one-out band, and its slow end is not (calc.TEAM_RESIDUAL's comment:
    two teams' MoE rows on one device miss by 1.5-2.4x apart, which one rate factor cannot carry)."""
    lo, hi = calc.TEAM_RESIDUAL
    step_lo = calc.STEP_RESIDUAL[0]
    assert lo < 1 < hi
    assert step_lo < lo  # the fast end tightens
    cal = calc.calibrate_from_measured(_csv(_torchtitan()))
    band = cal.band_for(FP8_H100)
    assert band[0] <= lo and band[1] >= hi  # never narrower than the published teams' spread
    assert cal.band_for("A device the team did not measure") == calc.STEP_RESIDUAL


def test_team_residual_is_what_the_packaged_file_gives():
    r = team.team_residuals()
    assert len(r) >= 30
    assert np.percentile(r, [10, 90]) == pytest.approx(calc.TEAM_RESIDUAL, abs=0.01)


def test_a_slower_team_gets_a_factor_below_one_and_its_own_rate_back():
    """One packaged row, its measured tokens/s cut by 20%: the fitted constants predict the cut rate."""
    row = dict(_torchtitan()[0])
    slow = float(row["tokens_per_second_per_device"]) * 0.8
    row["tokens_per_second_per_device"] = f"{slow:.1f}"
    steps = calc.load_team_steps(_csv([row]))
    cal = calc.calibrate_from_measured(steps)
    assert cal.factors[FP8_H100] < 1.0
    hw = calc.step_hardware(FP8_H100)
    k = cal.constants_for(hw)
    got = float(calc.step_time(steps.shapes[0], steps.layouts[0], hw, k).tokens_per_second_per_device)
    assert got == pytest.approx(slow, rel=0.01)
    other = calc.step_hardware("A100 SXM 80GB, BF16 tensor core, dense")
    assert cal.constants_for(other) == calc.STEP_CONSTANTS  # a device the team did not measure


def test_a_preset_name_stands_for_the_shape():
    text = ("device,model,devices,tp,zero_stage,micro_batch,seq_len,global_batch_tokens,recompute,"
            "tokens_per_second_per_device\n"
            "\"H100 SXM, BF16 tensor core, dense\",Llama 3.1 8B,8,1,3,2,8192,1048576,selective,6000\n")
    steps = calc.load_team_steps(text)
    assert steps.shapes[0] == calc.StepShape.from_preset("Llama 3.1 8B")
    assert steps.layouts[0].tp == 1 and steps.layouts[0].micro_batch == 2


@pytest.mark.parametrize(("edit", "words"), [
    (lambda t: t.replace("tokens_per_second_per_device", "tps"), "lacks column(s) tokens_per_second_per_device"),
    (lambda t: t.replace(",6000", ",fast"), "row 2: tokens_per_second_per_device must be a number"),
    (lambda t: t.replace(",6000", ",-1"), "row 2: tokens_per_second_per_device must be a finite number > 0"),
    (lambda t: t.replace(",selective,", ",,"), "row 2: recompute must be one of"),
    (lambda t: t.replace("Llama 3.1 8B", "Llama 9"), "row 2: model must be one of"),
    (lambda t: t.replace(",Llama 3.1 8B,", ",,"), "row 2: give the model's shape"),
    (lambda t: t.replace(",8,1,3,", ",6,4,3,"), "row 2:"),  # 6 devices do not split by tp 4
    (lambda t: t.splitlines()[0] + "\n", "the file has no rows"),
    (lambda t: t.replace("recompute,", "recompute,flash_attention,").replace("selective,", "selective,maybe,"),
     "row 2: flash_attention must be True or False (got 'maybe')"),
    (lambda t: t.replace("device,model,", "device,params,n_layers,d_model,flash_attention,")
     .replace("Llama 3.1 8B,", "8e9,32,4096,FALSE,"), "row 2: flash_attention FALSE times each head's scores"),
])
def test_bad_files_are_refused_naming_the_row_and_column(edit, words):
    text = ("device,model,devices,tp,zero_stage,micro_batch,seq_len,global_batch_tokens,recompute,"
            "tokens_per_second_per_device\n"
            "\"H100 SXM, BF16 tensor core, dense\",Llama 3.1 8B,8,1,3,2,8192,1048576,selective,6000\n")
    with pytest.raises(calc.TrainingBudgetError, match="measured steps") as e:
        calc.calibrate_from_measured(edit(text))
    assert words in str(e.value) and str(e.value).count("row 2") <= 1


def test_an_unknown_device_is_refused_by_name():
    text = _csv([{**_torchtitan()[0], "device": "Z9000"}])
    with pytest.raises(calc.TrainingBudgetError, match="device 'Z9000'"):
        calc.calibrate_from_measured(text)


def test_a_rate_the_factor_cannot_reach_is_flagged():
    """A step measured at a twentieth of the published rate (a CPU run labelled as a GPU, say) hits
    the factor's floor: the calibration says so instead of passing it off as a fit."""
    row = dict(_torchtitan()[0])
    row["tokens_per_second_per_device"] = f"{float(row['tokens_per_second_per_device']) / 20:.1f}"
    cal = calc.calibrate_from_measured(_csv([row]))
    assert cal.factors[FP8_H100] == pytest.approx(team.FACTOR_RANGE[0], rel=0.01)
    assert cal.capped == (FP8_H100,) and "at a bound of the factor" in cal.basis


def test_two_spellings_of_one_device_are_one_device():
    rows = _torchtitan()[:2]
    rows[1] = {**rows[1], "device": rows[1]["device"].upper()}
    cal = calc.calibrate_from_measured(_csv(rows))
    assert list(cal.factors) == [FP8_H100] and cal.rows[FP8_H100] == 2


def test_the_shipped_band_is_the_leave_one_out_residuals_of_the_packaged_fit_rows():
    """calc.STEP_RESIDUAL is p10 and p90 of measured / predicted with each packaged fit row left out of
    the fit (what bench/bench_steptime.py prints), on STEP_RESIDUAL_ROWS rows: a change to the
    measured file or the model that moves the band fails here until the constants are refitted."""
    from trainbudget.calc.step.runs import STEP_RESIDUAL_ROWS

    m = calc.load_measured_steps()
    fit = m.fit_mask
    assert int(fit.sum()) == STEP_RESIDUAL_ROWS
    loo = calc.step_leave_one_out(lambda c, mask: m.predict(c, fit)[mask], m.measured[fit], sweeps=3)
    ratio = m.measured[fit] / loo
    assert np.percentile(ratio, [10, 90]) == pytest.approx(calc.STEP_RESIDUAL, abs=0.0015)
