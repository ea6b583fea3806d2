"""The `trainbudget` command: a thin layer over trainbudget.calc and the addin modules.

Bad input prints one line on stderr and exits with status 2, never a traceback.
"""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ... import calc
from ...calc import show_value as show
from .. import TEMPLATE_NAME
from . import layout as model_layout, render as rep
from .calibrate import calibrate
from .estimate import NumberType, estimate
from .fit import fit
from .lite import lite
from .plan import plan


def _table(path: str | None) -> calc.DeviceTable:
    if path is None:
        return calc.catalog()
    from ..template import devices_table

    return devices_table.load_catalog(path)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=float))


def _fancy() -> bool:
    """A formatted table on a terminal; plain text when piped."""
    return sys.stdout.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trainbudget")
def cli() -> None:
    """Training budgets: bytes, FLOPs, hours and cost, for engineers and finance."""


catalog_option = model_layout.CATALOG


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@catalog_option
def devices(as_json: bool, as_csv: bool, catalog_path: str | None) -> None:
    """List the device catalog: name, kind, TFLOP/s, memory, watts, source."""
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    rows = calc.device_rows(_table(catalog_path))
    if as_json:
        _emit_json(rows)
    elif as_csv:
        rep.echo(rep.to_csv(rows), nl=False)
    else:
        rep.echo(rep.devices_text(rows), nl=False)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@catalog_option
def runs(as_json: bool, catalog_path: str | None) -> None:
    """Published training runs: the utilization they imply, and hours predicted at their MFU."""
    rows = calc.runs_rows(_table(catalog_path))
    if as_json:
        _emit_json(rows)
    else:
        rep.echo(rep.runs_text(rows), nl=False)


@cli.command()
@click.option("--device", default=None, help="Only this device (catalog name or hardware, e.g. 'H100 SXM').")
@click.option("--provider", default=None, help="Only this provider (aws, gcp, azure, lambda, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@catalog_option
def prices(device: str | None, provider: str | None, as_json: bool, as_csv: bool, catalog_path: str | None) -> None:
    """Cloud prices per device-hour (on demand, 1-year, 3-year, spot), each with its source, date and age."""
    from ... import calc

    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    if provider is not None and provider.strip().lower() not in calc.price_providers():
        asked = provider.strip().lower()
        asked = asked if len(asked) <= 40 else asked[:39] + "…"
        raise calc.TrainingBudgetError(f"--provider {show(provider)}: no {asked} prices, unknown provider "
                                       f"(providers: {', '.join(calc.price_providers())})")
    rows = [r for r in calc.price_rows(device, table=_table(catalog_path))
            if provider is None or r["provider"] == provider.strip().lower()]
    if not rows:
        raise calc.TrainingBudgetError(f"no prices for device {show(device)}"
                                       + (f" from {show(provider)}" if provider else ""))
    if as_json:
        _emit_json(rows)
    elif as_csv:
        rep.echo(rep.to_csv(rows), nl=False)
    else:
        rep.echo(rep.prices_text(rows), nl=False)


@cli.command()
def functions() -> None:
    """Print the Excel function reference (Markdown), generated from the registry."""
    from ..functions import docs

    click.echo(docs.function_reference())


@cli.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=TEMPLATE_NAME,
              show_default=True, help="Where to write the template (.xlsm); default: this folder.")
@click.option("--force", is_flag=True, help="Replace an existing file (kept as NAME.bak).")
def build(out: Path, force: bool) -> None:
    """Write the template workbook (native formulas with cached values, xlwings VBA project)."""
    from ..template import build as template

    built = template.build(out, force=force)
    cells = sum(len(v) for v in built.values.values())
    click.echo(f"wrote {built.path} ({cells} formula cells with cached values)")


@cli.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
@click.option("--recalc/--no-recalc", default=None,
              help="Recalculate with LibreOffice (default: when it is installed).")
def verify(path: Path, as_json: bool, recalc: bool | None) -> None:
    """Check a TrainingBudget workbook; one line per problem, exit 1 if any error, 0 when clean
    (warnings are printed and leave the status 0)."""
    from ..verify import check

    problems = check.verify(path, recalc)  # reads the package first: a bad or hostile file is refused
    failed = check.errors(problems)
    if as_json:  # every problem, one object each
        _emit_json([p.as_dict() for p in problems])
    else:  # one line per kind of problem, with the count, the first places and the fix
        for line in check.grouped(problems):
            click.echo(line)
        warned = len(problems) - len(failed)
        warnings = f"{warned} warning{'s' * (warned != 1)}"
        if not failed:
            click.echo(f"{path}: clean" + (f" ({warnings})" if warned else ""))
        else:
            click.echo(f"{path}: {len(failed)} error{'s' * (len(failed) != 1)}, {warnings} (--json lists each)")
    if failed:
        raise SystemExit(1)


@cli.command()
@click.option("--backend", default="auto", show_default=True, help="auto, numpy, torch or mlx.")
@click.option("--dtype", default=None,
              help="Precision: fp32, fp64, tf32, bf16, fp16, fp8 (default: the backend's first).")
@click.option("--seconds", type=NumberType(-math.inf), default=20.0, show_default=True,
              help="Time budget, at most 3600.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurement with its provenance as JSON.")
@click.option("--into", "workbook", type=click.Path(dir_okay=False, path_type=Path),
              help="Add (or update) the measured row in this workbook's Devices table.")
@click.option("--name", default=None, help="Device name for --into (default: hardware, backend and dtype).")
@click.option("--memory-gib", type=NumberType(), default=None,
              help="Device memory in GiB for --into (default: read from the hardware where the backend can).")
@click.option("--watts", type=NumberType(), default=None,
              help="Board power in watts for --into (default: the NVML power limit where pynvml is installed).")
def measure(backend: str, dtype: str | None, seconds: float, as_json: bool, workbook: Path | None,
            name: str | None, memory_gib: float | None, watts: float | None) -> None:
    """Measure this machine's matmul rate (checked against float64) and optionally record it."""
    from ..measure import backends, core, into

    core.check_seconds(seconds)  # a bounded, finite budget, checked before anything starts
    for option, value in (("--memory-gib", memory_gib), ("--watts", watts)):
        if value is not None:
            calc.check_positive(option, value)  # finite and > 0: inf or nan never reach the table
    if workbook is not None:  # refuse before spending the time budget
        into.check_writable(workbook, name)
    chosen = backends.choose(backend)
    m = into.run(chosen, dtype or chosen.dtypes[0], seconds, show_progress=_fancy() and not as_json)
    if as_json:
        _emit_json(m.as_dict())
    else:
        click.echo(into.text(m), nl=False)
    if workbook is not None:
        from ..measure import hardware

        memory_gib = memory_gib if memory_gib is not None else hardware.memory_gib(chosen)
        watts = watts if watts is not None else hardware.watts(chosen)
        device = into.as_device(m, name, memory_gib, watts)
        done = into.record(workbook, device)
        from ..ooxml import package

        bak = package.real_target(workbook).name + ".bak"
        click.echo(f"{done} {device.name!r} ({device.tflops:.3g} TFLOP/s) in {workbook}; "
                   f"the original is kept as {bak}", err=as_json)
        missing = hardware.missing_text(memory_gib, watts)
        if missing:
            click.echo(missing, err=as_json)


@cli.command()
@click.argument("workbook", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The macro-free .xlsx to write (never the input).")
@click.option("--pdf", type=click.Path(dir_okay=False, path_type=Path), help="Also print a PDF report here.")
@click.option("--sheets", default=None, show_default="Summary,Budget",
              help="Sheets the PDF prints, comma-separated (with --pdf).")
def export(workbook: Path, out: Path, pdf: Path | None, sheets: str | None) -> None:
    """Make the e-mail copy: macro-free .xlsx, native formulas with cached values (and a PDF)."""
    from ..export import mailcopy as exporting
    from ..ooxml import package

    names = [s.strip() for s in sheets.split(",") if s.strip()] if sheets is not None else None
    if sheets is not None and pdf is None:
        raise click.UsageError("--sheets chooses what the PDF prints: give --pdf too")
    if sheets is not None and not names:
        raise click.UsageError(f"--sheets names no sheet (got {sheets!r})")
    package.check(workbook)  # a bad or hostile file is refused before anything else reads it
    done = exporting.export(workbook, out, pdf, names)
    click.echo(f"wrote {done.out}: {done.rewritten} formulas made native, {len(done.frozen)} frozen to values"
               + (f" ({', '.join(done.frozen)})" if done.frozen else "")
               + ("; added a Devices sheet" if done.added_devices else "")
               + (f"; PDF {done.pdf}" if done.pdf else "") + f" in {done.seconds:.1f} s")


for command in (estimate, fit, plan, lite, calibrate):  # each in its own module of cli/
    cli.add_command(command)


_LONG_WORD = re.compile(r"\S{4097,}")  # longer than any path (PATH_MAX 4096): a pasted value, not a file name


def _clip(line: str) -> str:
    """`line` with any run of over 4,096 characters without a space (a 100,000-character value echoed by
    click's own "Invalid value" message; a path, up to 4,096, stays whole) cut to its first 60 and an
    ellipsis with the length: one short line."""
    return _LONG_WORD.sub(lambda m: f"{m.group()[:60]}… ({len(m.group()):,} characters)", line)


def run(command: Callable[..., Any], args: list[str]) -> int:
    """Run a click command; bad input becomes one line on stderr and status 2. numpy's overflow
    warnings are silenced: calc turns an overflowing result into a TrainingBudgetError itself."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            command.main(args=args, prog_name="trainbudget", standalone_mode=False)
    except (calc.TrainingBudgetError, click.UsageError, click.BadParameter) as e:
        message = e.format_message() if isinstance(e, click.ClickException) else str(e)
        click.echo(rep.safe(_clip(f"trainbudget: error: {message}")), err=True)
        return 2
    except OSError as e:  # a file that cannot be read or written
        click.echo(f"trainbudget: error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), err=True)
        return 2
    except click.ClickException as e:
        click.echo(f"trainbudget: error: {e.format_message()}", err=True)
        return e.exit_code
    except SystemExit as e:
        return int(e.code or 0)
    except (KeyboardInterrupt, click.Abort):
        click.echo("trainbudget: interrupted", err=True)
        return 130
    return 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run(cli, sys.argv[1:]))




if __name__ == "__main__":
    main()
