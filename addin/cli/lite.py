"""`trainbudget lite --out FILE.xlsx`: the xlwings Lite edition for Mac, Windows and Excel on the web."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The macro-free .xlsx to write.")
@click.option("--force", is_flag=True, help="Replace an existing file (kept as FILE.xlsx.bak).")
def lite(out: Path, force: bool) -> None:
    """Write the xlwings Lite edition: the template's sheets, macro-free, with main.py bundled."""
    from ..lite import workbook

    done = workbook.write(out, force)
    click.echo(f"wrote {done.path}: the template's sheets (macro-free) and main.py ({done.main_py_bytes:,} bytes, "
               "calculator and data bundled) for the xlwings Lite add-in (store id WA200008175)")
