"""The sheets' price rule is written once (pieces.price_rule): price_used (the price) and price_source
(whose price) are built from it, as compare_price / compare_source are from pieces.compare_rule."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from trainbudget.addin.functions import pieces

count = st.floats(0, 308).map(lambda e: float(math.ceil(10.0 ** e)))


def _recording(monkeypatch, name: str) -> list[dict]:
    calls: list[dict] = []
    real = getattr(pieces, name)
    monkeypatch.setattr(pieces, name, lambda *a, **k: calls.append(k) or real(*a, **k))
    return calls


def test_price_used_and_price_source_are_one_rule(monkeypatch):
    calls = _recording(monkeypatch, "price_rule")
    used = pieces.price_used("Provider", "Price_found", "Price_per_hour", "Row_price")
    source = pieces.price_source("Provider", "Plan", "Price_found", "Price_per_hour", "Row_price")
    assert len(calls) == 2 and calls[0].keys() == calls[1].keys()  # each case given once, by both
    # the same branches: with each case's rendering blanked out, the two formulas are one text
    for formula, cases in ((used, calls[0]), (source, calls[1])):
        assert formula == pieces.price_rule(pieces.PriceCells("Provider", "Price_found", "Price_per_hour", "Row_price"),
                                             **cases)
    skeleton = {k: f"<{k}>" for k in calls[0]}
    text = pieces.price_rule(pieces.PriceCells("P", "F", "T", "O"), **skeleton)
    assert all(text.count(mark) == 1 for mark in skeleton.values())  # every case rendered, once
    assert calls[0]["provider_price"] == "Price_found" and calls[1]["typed_price"] == f'"{pieces.TYPED}"'
    assert calls[0]["no_price"] == calls[1]["no_price"] == f'"{pieces.NO_PRICE}"'


def test_a_comparison_rows_price_and_source_are_one_rule(monkeypatch):
    calls = _recording(monkeypatch, "compare_rule")
    pieces.compare_price("Name", "Chosen", "Used", "Own")
    pieces.compare_source("Name", "Chosen", "Source", "Own")
    assert len(calls) == 2 and calls[0].keys() == calls[1].keys()
    assert (calls[0]["chosen_value"], calls[1]["chosen_value"]) == ("Used", "Source")
