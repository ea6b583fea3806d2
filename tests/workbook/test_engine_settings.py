"""The LibreOffice engine's settings: TRAINBUDGET_LO_TIMEOUT must be a bounded number of seconds."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("value", ["inf", "nan", "0", "1e9", "soon"])
def test_libreoffice_timeout_is_bounded(monkeypatch, value):
    from trainbudget.addin import libreoffice as engine

    monkeypatch.setenv("TRAINBUDGET_LO_TIMEOUT", value)
    with pytest.raises(engine.EngineError, match="TRAINBUDGET_LO_TIMEOUT must be seconds"):
        engine.timeout_s()
