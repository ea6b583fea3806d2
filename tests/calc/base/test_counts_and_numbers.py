"""One count and number syntax on every door (command line, scenarios cells, calc's parsers):
',' separates thousands only ("7,5B" is refused with "write 7.5B", never read as 75B), ASCII
digits only, nothing non-finite; and the limits on --node, --budget, the tariff and fit's inputs."""

from __future__ import annotations

import math

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.base.units import parse_count, parse_number, parse_share

H100 = "H100 SXM, BF16 tensor core, dense"
PLAN = ("plan", "--tokens", "1T", "--days", "30")


@pytest.mark.parametrize(("text", "want"), [("1,000,000", 1e6), ("16,384", 16384.0), ("7,000B", 7e12),
                                            (" 7B ", 7e9), ("7 B", 7e9), ("7b", 7e9), ("1,000.5", 1000.5),
                                            ("12,345.678e3", 12345678.0)])
def test_thousands_separators_and_spacing_read(text, want):
    assert parse_count("--params", text) == want


@pytest.mark.parametrize(("text", "write"), [("7,5B", "write 7.5B"), ("1,5T", "write 1.5T"), ("1,2", "write 1.2"),
                                             ("1,00", "write 1.00"), ("1,0000", "write 1.0000")])
@pytest.mark.parametrize("parse", [parse_count, parse_number, parse_share])
def test_a_decimal_comma_is_refused_saying_what_to_write(parse, text, write):
    with pytest.raises(calc.TrainingBudgetError) as e:
        parse("--x", text)
    assert "--x" in str(e.value) and "',' separates thousands" in str(e.value)
    if parse is parse_count:
        assert write in str(e.value)


@pytest.mark.parametrize("text", ["", "  ", "\u0663", "\uff17B", "1e309", "nan", "inf", "-inf", "x" * 100_000,
                                  "1,,000", ",5", "1,234,56", "1e308B", "infB", "_7", "0", "-0", "-7B"])
@pytest.mark.parametrize("parse", [parse_count, parse_share])
def test_odd_text_is_one_refusal_naming_the_argument(parse, text):
    with pytest.raises(calc.TrainingBudgetError) as e:
        parse("--x", text)
    assert str(e.value).startswith("--x") and len(str(e.value)) < 300


def test_parse_number_reads_minus_zero_as_zero_and_refuses_huge_ints():
    assert math.copysign(1.0, parse_number("--x", "-0")) == 1.0
    with pytest.raises(calc.TrainingBudgetError, match="finite"):
        parse_number("--x", 10 ** 400)
    with pytest.raises(calc.TrainingBudgetError, match="finite"):
        parse_count("--x", 10 ** 400)


@pytest.mark.parametrize(("args", "words"), [
    (("--params", "7,5B"), "--params: write 7.5B"),
    (("--params", "7B", "--tokens", "1,5T"), "--tokens: write 1.5T"),
    (("--params", "7B", "--budget", "1,5M"), "--budget: write 1.5M"),
    (("--params", "7B", "--days", "1,5"), "--days: write 1.5"),
    (("--params", "7B", "--node", "100000000000000000000"), "--node must be at most"),
    (("--params", "7B", "--node", "1.5"), "--node must be a whole number"),
    (("--params", "7B", "--budget", "1e308"), "--budget must be at most 1e15 USD"),
    (("--params", "7B", "--budget", "1e308", "--csv"), "--budget must be at most 1e15 USD"),
    (("--params", "7B", "--own", "30000,4", "--usd-per-kwh", "1,5"), "--usd-per-kwh: write 1.5"),
])
def test_plan_refuses_before_any_output(args, words):
    got = invoke(*PLAN, *args)
    assert got.returncode == 2 and got.stdout == "", got.stdout[:300]
    assert words in got.stderr and "Traceback" not in got.stderr and len(got.stderr.splitlines()) == 1


def test_plan_reads_thousands_separators():
    got = invoke(*PLAN, "--params", "7,000,000,000", "--node", "8", "--json", "--device", H100)
    assert got.returncode == 0, got.stderr
    assert '"params": 7000000000.0' in got.stdout


def test_owned_tariff_overflow_names_the_tariff():
    for command in (("plan", "--params", "7B", "--tokens", "1T", "--days", "30"),
                    ("estimate", "--device", H100)):
        got = invoke(*command, "--own", "30000,4", "--usd-per-kwh", "1e308")
        assert got.returncode == 2 and "--usd-per-kwh" in got.stderr and "check --usd-per-kwh" in got.stderr
        assert "check the price" not in got.stderr


@pytest.mark.parametrize(("args", "words"), [
    (("--pue", "1,2"), "--pue: write 1.2"), (("--pue", "nan"), "--pue must be a finite number"),
    (("--pue", "0.5"), "--pue must be >= 1"), (("--price", "2,5"), "--price: write 2.5"),
    (("--params", "7,5B"), "--params: write 7.5B"), (("--devices", "\u0663"), "--devices must be written with ASCII"),
])
def test_estimate_refuses_decimal_commas_and_odd_numbers(args, words):
    got = invoke("estimate", *args)
    assert got.returncode == 2 and words in got.stderr, got.stderr


def test_estimate_reads_a_thousands_price():
    got = invoke("estimate", "--device", H100, "--price", "1,000", "--json")
    assert got.returncode == 0, got.stderr
    assert '"usd_per_device_hour": 1000.0' in got.stdout


def test_a_scenarios_pue_cell_with_a_decimal_comma_is_refused(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization,pue\na,7B,1T,"{H100}",8,0.4,"1,2"\n')
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "scenario 1: pue: write 1.2" in got.stderr, got.stderr


def test_a_scenarios_price_cell_takes_the_same_syntax(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization,price\na,7B,1T,"{H100}",8,0.4,"2,5"\n'
                    f'b,7B,1T,"{H100}",8,0.4,"1,000"\n')
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "price: write 2.5" in got.stderr, got.stderr
    path.write_text(f'name,params,tokens,device,devices,utilization,price\nb,7B,1T,"{H100}",8,0.4,"1,000"\n')
    got = invoke("estimate", "--scenarios", str(path), "--json")
    assert got.returncode == 0 and '"usd_per_device_hour": 1000.0' in got.stdout, got.stderr


def test_calc_node_is_bounded():
    from trainbudget.calc.planning import rank

    with pytest.raises(calc.TrainingBudgetError, match="node must be at most"):
        rank.rank_plans(rank.PlanQuestion(1e12, 30, params=7e9, node=1e20))


@pytest.mark.parametrize(("call", "words"), [
    (lambda: calc.train_memory(7e9, master="no").master, 0.0),
    (lambda: calc.train_memory(7e9, master="yes").master, 7e9 * 4),
    (lambda: calc.activation_bytes(32, 4096, 32, 2048, 1, sequence_parallel="no", tensor_parallel=2),
     calc.activation_bytes(32, 4096, 32, 2048, 1, sequence_parallel=False, tensor_parallel=2)),
    (lambda: calc.activation_bytes(32, 4096, 32, 2048, 1, flash_attention="False"),
     calc.activation_bytes(32, 4096, 32, 2048, 1, flash_attention=False)),
])
def test_text_flags_read_as_the_words_say(call, words):
    assert call() == words


@pytest.mark.parametrize("value", ["perhaps", "", "2", 2, 0.5, None, "nein"])
def test_other_flag_values_are_refused_naming_the_argument(value):
    with pytest.raises(calc.TrainingBudgetError, match="flash_attention must be True or False"):
        calc.activation_bytes(32, 4096, 32, 2048, 1, flash_attention=value)
