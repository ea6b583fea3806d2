"""The README's Excel function reference, generated from the registry."""

from __future__ import annotations

from .registry import FUNCTIONS, LITE_TABLE, REQUIRED, ExcelFunction

START, END = "<!-- functions:start -->", "<!-- functions:end -->"


def _example(spec: ExcelFunction) -> str:
    result = spec.call(spec.example_values)
    shown = f"{len(result)} rows x 2 columns" if isinstance(result, list) else f"{result:,.6g}"
    return f"`={spec.name}({', '.join(spec.example)})` gives {shown}"


def _signature(spec: ExcelFunction) -> str:
    return ", ".join(a.name if a in spec.required else f"[{a.name}]" for a in spec.args)


def _lite_call(spec: ExcelFunction) -> str:
    """The example with the Devices table last, an empty slot for each optional argument skipped."""
    given = list(spec.example) + [""] * (len(spec.args) - len(spec.example))
    return f"`={spec.name}({','.join([*given, 'Devices[#All]'])})`"


def _row(*cells: str) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


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
            out.append(_row(f"`{a.name}`", a.unit, a.help, "required" if default is REQUIRED else a.describe(default)))
        if spec.takes_device:
            meaning = "xlwings Lite only: " + LITE_TABLE.help[0].lower() + LITE_TABLE.help[1:]
            out.append(_row(f"`{LITE_TABLE.name}`", LITE_TABLE.unit, meaning, LITE_TABLE.describe(None)))
        out += ["", f"Example: {_example(spec)}."]
        if spec.takes_device:
            out.append(f"In xlwings Lite, `{LITE_TABLE.name}` comes after every optional argument: leave a slot "
                       f"empty for each one skipped, {_lite_call(spec)}.")
        out.append("")
    return "\n".join(out)
