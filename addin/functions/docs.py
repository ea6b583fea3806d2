"""The README's Excel function reference, generated from the registry."""

from __future__ import annotations

from .registry import FUNCTIONS, REQUIRED, ExcelFunction

START, END = "<!-- functions:start -->", "<!-- functions:end -->"


def _example(spec: ExcelFunction) -> str:
    result = spec.call(spec.example_values)
    shown = f"{len(result)} rows x 2 columns" if isinstance(result, list) else f"{result:,.6g}"
    return f"`={spec.name}({', '.join(spec.example)})` gives {shown}"


def _signature(spec: ExcelFunction) -> str:
    return ", ".join(a.name if a in spec.required else f"[{a.name}]" for a in spec.args)


def function_reference() -> str:
    """Markdown: every function, its arguments with units and defaults, an example, its native form."""
    out = []
    for spec in FUNCTIONS:
        out += [f"#### `{spec.name}({_signature(spec)})`", "",
                f"{spec.summary}. Returns {spec.unit}. "
                + ("Has a native Excel equivalent (the template and the e-mail export use it)."
                   if spec.native else "No native equivalent: the e-mail export freezes it to its values."),
                "", "| argument | unit | meaning | default |", "|---|---|---|---|"]
        for a in spec.args:
            default = spec.default(a)
            shown = "required" if default is REQUIRED else a.describe(default)
            cells = (f"`{a.name}`", a.unit, a.help, shown)
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out += ["", f"Example: {_example(spec)}.", ""]
    return "\n".join(out)
