"""`trainbudget calibrate FILE`: a team's measured training steps -> one factor per device on the step
model's achievable matmul rate, with the error on the team's rows before and after and the band a
prediction for that team then carries (calc.calibrate_from_measured; the file's columns are in
calc/step/team.py's module doc)."""

from __future__ import annotations

import json

import click

from ... import calc
from .estimate import _table
from .layout import CATALOG


@click.command()
@click.argument("measured", type=click.Path(exists=True, dir_okay=False))
@CATALOG
@click.option("--json", "as_json", is_flag=True, help="Print the factors, errors and bands as JSON.")
def calibrate(measured: str, catalog_path: str | None, as_json: bool) -> None:
    """Fit the step model's achievable rate to a team's MEASURED steps (a CSV), one factor per device."""
    text = calc.read_user_text(measured, "measured steps")
    table = None if catalog_path is None else _table(catalog_path)
    cal = calc.calibrate_from_measured(text, table)
    if as_json:
        click.echo(json.dumps({"devices": [
            {"device": d, "rows": cal.rows[d], "factor": cal.factors[d], "median_error_before": cal.error_before[d],
             "median_error_after": cal.error_after[d], "step_time_low": cal.band[d][0],
             "step_time_high": cal.band[d][1], "at_bound": d in cal.capped} for d in cal.factors],
            "basis": cal.basis}, indent=2))
        return
    width = max(len("device"), *(len(d) for d in cal.factors))
    click.echo(f"{'device':<{width}}  rows  factor  median error before -> after  step time band")
    for d in cal.factors:
        lo, hi = cal.band[d]
        click.echo(f"{d:<{width}}  {cal.rows[d]:>4}  {cal.factors[d]:>6.3f}  {cal.error_before[d]:>19.1%} -> "
                   f"{cal.error_after[d]:>5.1%}  x{lo:.3g}-x{hi:.3g}"
                   + ("  (at a bound of the factor: check these rows)" if d in cal.capped else ""))
    lo, hi = calc.STEP_RESIDUAL
    click.echo(f"factor: on the achievable matmul rate the published runs reach (1 = theirs); band: step time "
               f"measured / predicted, p10-p90 (x{lo:g}-x{hi:g} without a team's own steps)")
