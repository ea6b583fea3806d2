"""`prices` and `--price PROVIDER:...` refuse an unknown provider or offering as calc does, saying what the
provider has."""

from __future__ import annotations

import json

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.money import prices

H100 = "H100 SXM, BF16 tensor core, dense"

PLAN = ("plan", "--params", "7B", "--tokens", "100B", "--days", "10")


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_prices_names_an_unknown_provider_as_calc_does(capsys):
    """prices --provider nope said "no prices for device None from 'nope'" (no device was given);
    now it says the provider is unknown and lists the known ones, as a price spec's refusal does."""
    code, out, err = _cli(capsys, "prices", "--provider", "nope")
    assert code == 2 and out == ""
    assert f"no nope prices, unknown provider (providers: {', '.join(prices.providers())})" in err
    code, out, err = _cli(capsys, "prices", "--provider", " AWS", "--json")
    assert code == 0 and {r["provider"] for r in json.loads(out)} == {"aws"}


@pytest.mark.parametrize(("spec", "tail"), [
    ("aws:spot", "; aws publishes on_demand for it)"),
    ("gcp:spot:a3-highgpu-1g", "; gcp publishes on_demand, 1yr, 3yr for it)"),
    ("aws:od:p5en.48xlarge", "; that aws offering prices H200 SXM)"),
    ("lambda:od:8x  H100 SXM", "; lambda's offerings for it: 1x H100 SXM, 8x H100 SXM)"),
])
def test_a_price_refusal_says_what_the_provider_has(capsys, spec, tail):
    """"no aws spot price for 'H100 ...' (providers with prices for it: aws, ...)" listed aws among
    the providers with prices, which reads as a contradiction; the refusal now says which plans the
    provider publishes for the device, which hardware a named offering prices, or the provider's
    offerings for it. The same words from calc, estimate, plan and a scenarios row."""
    with pytest.raises(calc.TrainingBudgetError) as said:
        calc.budget(calc.job(params=7e9, device=H100, price=spec))
    assert str(said.value).endswith(tail) and str(said.value).startswith("price: no ")
    for args in (("estimate", "--params", "7B", "--device", H100), (*PLAN, "--device", H100)):
        code, out, err = _cli(capsys, *args, "--price", spec)
        assert code == 2 and out == "" and err.strip() == f"trainbudget: error: {said.value}"
