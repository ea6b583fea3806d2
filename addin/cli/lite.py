"""`trainbudget lite --out FILE.xlsx [--from WORKBOOK]`: the xlwings Lite edition for Mac, Windows and Excel
on the web."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The macro-free .xlsx to write.")
@click.option("--from", "source", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A TrainingBudget workbook (.xlsm or .xlsx) whose Devices rows, measured ones included, "
                   "the Lite edition carries (default: the packaged catalog).")
@click.option("--force", is_flag=True, help="Replace an existing file (kept as FILE.xlsx.bak; a symlink is "
                                            "replaced, its target left as it was).")
def lite(out: Path, source: Path | None, force: bool) -> None:
    """Write the xlwings Lite edition: the template's sheets, macro-free, with main.py bundled."""
    from ..lite import workbook

    done = workbook.write(out, force, source)
    rows = "" if done.devices_from_source is None else f", {done.devices_from_source} Devices rows from {source}"
    click.echo(f"wrote {done.path}: the template's sheets (macro-free{rows}) and main.py ({done.main_py_bytes:,} "
               "bytes, calculator and data bundled) for the xlwings Lite add-in (store id WA200008175)")
