"""Text renderings of the plan and price tables (calc.plans, calc.prices); formatting only."""

from __future__ import annotations

from typing import Any

from .render import format_count

_UNITS = (("hours", "hours"), ("device_hours", "device-hours"), ("usd", "USD"), ("kwh", "kWh"))


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def plans_text(rows: list[dict[str, Any]], prior: dict[str, Any] | None) -> str:
    """One block per plan: each figure as 'low / expected / high' (ranges) or one value."""
    lines = []
    for r in rows:
        head = (f"{r['name']}: {format_count(r['params'])} params, {format_count(r['tokens'])} tokens, "
                f"{r['devices']} x {r['device']}")
        lines.append(head)
        for key, unit in _UNITS:
            if key in r:
                lines.append(f"  {unit:13} {_num(r[key])}")
            elif r.get(f"{key}_expected") is not None:
                lines.append(f"  {unit:13} {_num(r[key + '_low'])} / {_num(r[key + '_expected'])} / "
                             f"{_num(r[key + '_high'])}  (low / expected / high)")
        if "usd_per_device_hour" in r:
            dated = (f", as of {r['price_as_of']} ({r['price_age_days']} days old)" if r.get("price_as_of") else "")
            lines.append(f"  price         {r['usd_per_device_hour']:.4g} USD per device-hour: {r['price']}{dated}")
    if prior:
        lines.append(f"utilization prior: {prior['low']:.3f} / {prior['expected']:.3f} / {prior['high']:.3f} "
                     f"(10th / 50th / 90th percentile of {prior['n_runs']} published runs, {prior['basis']}); "
                     f"goodput {prior['goodput']:.2f} (Llama 3 paper, arXiv:2407.21783 §3.3.4)")
    return "\n".join(lines) + "\n"


def prices_text(rows: list[dict[str, Any]]) -> str:
    """Prices as aligned text: plans in USD per device-hour, the date read and the age."""
    def cell(v: float | None) -> str:
        return f"{v:8.3f}" if v is not None else f"{'-':>8}"

    out = [f"{'provider':12} {'offering':28} {'device':16} {'on_dem':>8} {'1yr':>8} {'3yr':>8} {'spot':>8}  as_of"]
    for r in rows:
        out.append(f"{r['provider']:12} {r['offering'][:28]:28} {r['device'][:16]:16} "
                   + " ".join(cell(r[f'usd_per_device_hour_{p}']) for p in ("on_demand", "1yr", "3yr", "spot"))
                   + f"  {r['as_of']} ({r['age_days']} days old)")
    out.append("USD per device-hour; each row's source: --json or --csv")
    return "\n".join(out) + "\n"
