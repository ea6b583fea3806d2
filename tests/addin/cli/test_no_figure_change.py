"""No figure changes when calc moves: `estimate --json`, `fit --json` and `plan --json` for 200
seeded command lines give what they gave before the move (tests/data/doors_json.json.gz, recorded
by tests/doors_record.py), every key and every float equal, refusals word for word."""

from __future__ import annotations

import gzip
import json

import pytest

from tests import doors_record

RECORDED = json.loads(gzip.decompress(doors_record.FIXTURE.read_bytes()))
# Keys renamed since the recording (new name -> recorded name), so one vocabulary can grow.
RENAMED: dict[str, str] = {}


def _recorded_names(value):
    """`value` with keys renamed back to the recording's vocabulary."""
    if isinstance(value, dict):
        return {RENAMED.get(k, k): _recorded_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_recorded_names(v) for v in value]
    return value


def test_the_command_lines_are_the_recorded_ones() -> None:
    assert [r["args"] for r in RECORDED] == doors_record.command_lines()


@pytest.mark.parametrize("i", range(0, doors_record.JOBS, 10))
def test_every_figure_as_recorded(i: int) -> None:
    for row in RECORDED[i:i + 10]:
        now = doors_record.digest(doors_record.run(row["args"]))
        now["out"] = _recorded_names(now["out"])
        assert now["exit"] == row["exit"], row["args"]
        assert now["out"] == row["out"], row["args"]
