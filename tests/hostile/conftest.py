"""Fixtures shared by the hostile files' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import hostile


@pytest.fixture(scope="session")
def bomb(tmp_path_factory) -> Path:
    """A ~2 MB zip whose sheet part inflates to 2 GiB (built once per session: ~20 s)."""
    return hostile.zip_bomb(tmp_path_factory.mktemp("bomb") / "bomb.xlsm")
