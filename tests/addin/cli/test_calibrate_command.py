"""`trainbudget calibrate FILE`: a team's measured steps -> one factor per device, as text and JSON,
and a bad file is one line on stderr with status 2."""

from __future__ import annotations

import json

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run

H100 = "H100 SXM, BF16 tensor core, dense"
HEADER = ("device,model,devices,tp,zero_stage,micro_batch,seq_len,global_batch_tokens,recompute,"
          "tokens_per_second_per_device\n")


def _file(tmp_path, *tps: float) -> str:
    rows = "".join(f'"{H100}",Llama 3.1 8B,{8 * (i + 1)},1,3,2,8192,{1048576 * (i + 1)},selective,{t}\n'
                   for i, t in enumerate(tps))
    path = tmp_path / "steps.csv"
    path.write_text(HEADER + rows, encoding="utf-8")
    return str(path)


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_calibrate_prints_the_factor_calc_fits(capsys, tmp_path):
    path = _file(tmp_path, 6000, 5800)
    want = calc.calibrate_from_measured(calc.read_user_text(path, "measured steps"))
    code, out, err = _cli(capsys, "calibrate", path)
    assert code == 0 and err == ""
    assert H100 in out and f"{want.factors[H100]:.3f}" in out and f"{want.error_before[H100]:.1%}" in out
    code, out, _ = _cli(capsys, "calibrate", path, "--json")
    got = json.loads(out)["devices"][0]
    assert code == 0 and got["device"] == H100 and got["rows"] == 2
    assert got["factor"] == want.factors[H100] and got["step_time_high"] == want.band[H100][1]


def test_calibrate_refuses_a_bad_file_in_one_line(capsys, tmp_path):
    path = _file(tmp_path, 6000)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f'"{H100}",Llama 3.1 8B,8,1,3,2,8192,1048576,sideways,6000\n')
    code, out, err = _cli(capsys, "calibrate", path)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "measured steps row 3: recompute must be one of" in err
