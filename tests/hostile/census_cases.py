"""The hostile-input catalogue of tests/hostile/census.py: every case tagged with its class
and its expected handling. Cases come from the tests' own parameter lists where they are data
(test_bad_input.CASES and test_argument_checks' (call, text) lists, read from the test files' source, so the
catalogue and the tests do not drift; test_verify_inputs.CASES; test_workbook_files.CASES x
COMMANDS), from a grid (every public calc function's numeric argument x bad values, every flag
argument x flag texts, every numeric option of `estimate` and `fit` x bad texts) and from
reported reproductions.

A case is a dict: id, cls (one of CLASSES), kind ("calc", "cli", "verify") and what the kind needs.
Expected handling ("expect"):
- calc "refused": a TrainingBudgetError whose message holds `words` (default: the argument's name;
  "a|b" is either);
- calc "refused_or_finite": that, or a result whose every number is finite (inf allowed where
  `allow_inf`: "never fits");
- calc "equal": the result equals that of `same` (a flag text read as written);
- calc "cell_error": a UDF's result is a text starting "#VALUE!" (or "#N/A" for an unknown name) holding `words`;
- cli "exit2": exit status 2, one line on stderr holding `words`, no traceback;
- cli "exit2_or_json": that, or exit 0 with valid JSON (RFC 8259: no NaN or Infinity) on stdout;
- cli "json": exit 0 and valid JSON;
- cli "no_hang": done within the timeout with no traceback;
- cli "bounded": no traceback and a peak RSS under `mb`;
- verify "finding": `verify --no-recalc --json` exits 1 with an error located at `where`.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
H = "H100 SXM, BF16 tensor core, dense"
CLASSES = ("tracebacks", "accepted when it must be refused", "silent wrong numbers", "misleading words", "hangs",
           "resources", "verify does not read the inputs", "older surfaces")

# valid values for required arguments, by name (source text evaluated with calc, np, math, H)
REQUIRED = {"params": "7e9", "tokens": "1e12", "device": "H", "n_layers": "32", "d_model": "4096", "n_heads": "32",
            "seq_len": "4096", "micro_batch": "1", "capex_usd": "30000.0", "watts": "700.0", "usd_per_kwh": "0.1",
            "model": "'llama 3.1 8b'", "devices": "8"}
# arguments that are no numbers (or not the caller's): never varied as numbers
NOT_NUMERIC = {"device", "table", "runs", "method", "optimizer", "recompute", "loss", "prior", "model", "path",
               "name", "job", "text", "moe", "memory_options", "flops_options"}
EXTRA = {"train_cost": {"usd_per_device_hour": "2.5"}}  # what a function needs beyond its required arguments
CONTEXT = {  # arguments that only mean something together: the others given valid values
    **{f"model_params.{n}": {"q_lora_rank": "1536", "kv_lora_rank": "512", "qk_nope_head_dim": "128",
                             "qk_rope_head_dim": "64", "v_head_dim": "128"}
       for n in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")}}
NAMED_AS = {"usd_per_device_hour": "usd_per_device_hour|price"}  # how a refusal may name the argument
SCALAR_ONLY = {"fit_layouts", "utilization_prior"}  # no broadcasting: no shape-mismatch case
OPTION_NAMES = {"--tp": "tensor_parallel", "--pp": "pipeline_parallel", "--ep": "expert_parallel",
                "--cp": "context_parallel"}
SKIP_FUNCTIONS = {"catalog", "load_devices", "load_prices", "model_presets", "model_preset", "budget", "backtest",
                  "parse_count", "load_config", "budget_rows", "usable_bytes", "device_tflops",
                  "job"}  # calc.job only groups names: budget(job) checks each, and its cases are the budget's
BAD_NUMBERS = {  # value source -> (expected handling, class)
    "math.nan": ("refused", "accepted when it must be refused"),
    "math.inf": ("refused", "accepted when it must be refused"),
    "-1": ("refused_or_finite", "accepted when it must be refused"),
    "0": ("refused_or_finite", "accepted when it must be refused"),
    "1e308": ("refused_or_finite", "silent wrong numbers"),
    "'abc'": ("refused", "tracebacks"),
    "None": ("refused_or_finite", "tracebacks"),
    "True": ("refused", "tracebacks"),
    "[1, 2, 3]": ("refused", "tracebacks"),  # against another argument of shape (2,)
}
FLAG_TEXTS = {"'no'": "False", "'False'": "False", "'0'": "False", "'yes'": "True"}  # read as written
BAD_FLAGS = ("'maybe'", "None", "2", "''")
# a name the older code used for the same input (so the input existed then)
ALIASES = {"memory_gib": "memory_gb", "utilization_prior.device": "device_family",
           "utilization_prior.devices": "min_devices"}


def _public_functions(calc) -> dict[str, inspect.Signature]:
    """calc's public functions whose every required argument has a value in REQUIRED (the numeric
    doors; the others take calc's own objects, a Budget or a Job, and are reached through those)."""
    found = {}
    for name in sorted(calc.__all__):
        obj = getattr(calc, name)
        if callable(obj) and not isinstance(obj, type) and name not in SKIP_FUNCTIONS:
            sig = inspect.signature(obj)
            if all(p.name in REQUIRED for p in sig.parameters.values() if p.default is p.empty
                   and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)):
                found[name] = sig
    return found


def _base(sig: inspect.Signature) -> tuple[list[str], dict[str, str]]:
    args = [REQUIRED[p.name] for p in sig.parameters.values()
            if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
    kwargs = {p.name: REQUIRED[p.name] for p in sig.parameters.values()
              if p.default is p.empty and p.kind == p.KEYWORD_ONLY}
    return args, kwargs


def _words(option: str) -> str:
    """An option's name as a message may give it: --memory-gib, memory_gib, memory-gib (alternatives by |)."""
    return "|".join((option, option[2:].replace("-", "_"), option[2:], OPTION_NAMES.get(option, option)))


def grid(calc) -> list[dict]:
    """Every public calc function's numeric argument x BAD_NUMBERS, and its flags x flag texts."""
    cases = []
    for func, sig in _public_functions(calc).items():
        params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        args, kwargs = _base(sig)
        kwargs |= EXTRA.get(func, {})
        positional = [p.name for p in params if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
        for p in params:
            if p.name in NOT_NUMERIC:
                continue
            if isinstance(p.default, bool) or p.annotation in ("bool", bool):
                cases += _flag_cases(func, p.name, args, kwargs, positional)
                continue
            other = next((n for n in positional if n != p.name and n not in NOT_NUMERIC), None)
            for value, (expect, cls) in BAD_NUMBERS.items():
                if value == "[1, 2, 3]" and (other is None or func in SCALAR_ONLY):
                    continue
                a, k = _with(p.name, value, args, kwargs | CONTEXT.get(f"{func}.{p.name}", {}), positional)
                if value == "[1, 2, 3]":
                    a, k = _with(other, f"[{REQUIRED[other]}, {REQUIRED[other]}]", a, k, positional)
                cases.append({"id": f"calc.{func}({p.name}={value})", "cls": cls, "kind": "calc", "func": func,
                              "args": a, "kwargs": k, "arg": p.name, "expect": expect,
                              "words": [NAMED_AS.get(p.name, p.name)],
                              "allow_inf": func in ("devices_needed",)})
    return cases


def _with(name: str, value: str, args: list[str], kwargs: dict[str, str], positional: list[str]):
    a, k = list(args), dict(kwargs)
    if name in positional:
        a[positional.index(name)] = value
    else:
        k[name] = value
    return a, k


def _flag_cases(func, name, args, kwargs, positional) -> list[dict]:
    cases = []
    for text, same in FLAG_TEXTS.items():
        a, k = _with(name, text, args, kwargs, positional)
        sa, sk = _with(name, same, args, kwargs, positional)
        cases.append({"id": f"calc.{func}({name}={text})", "cls": "older surfaces", "kind": "calc", "func": func,
                      "args": a, "kwargs": k, "arg": name, "expect": "equal", "same": [sa, sk], "words": [name]})
    for text in BAD_FLAGS:
        a, k = _with(name, text, args, kwargs, positional)
        cases.append({"id": f"calc.{func}({name}={text})", "cls": "accepted when it must be refused", "kind": "calc",
                      "func": func, "args": a, "kwargs": k, "arg": name, "expect": "refused", "words": [name]})
    return cases


def _calls(node: ast.AST) -> tuple[str, list[str], dict[str, str]] | None:
    """(function, argument sources, keyword sources) of a lambda body `calc.f(...)` (None otherwise)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "calc"):
        return None
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    return node.func.attr, [ast.unparse(a) for a in node.args], {k.arg: ast.unparse(k.value) for k in node.keywords}


def from_tests() -> list[dict]:
    """test_bad_input.CASES and test_argument_checks' (call, text) lists: (lambda: calc.f(...), words)."""
    cases = []
    for name in ("calc/base/test_bad_input.py", "calc/base/test_argument_checks.py"):
        tree = ast.parse((ROOT / "tests" / name).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.List):
                continue
            for i, elt in enumerate(node.elts):
                if not (isinstance(elt, ast.Tuple) and len(elt.elts) == 2 and isinstance(elt.elts[0], ast.Lambda)
                        and not elt.elts[0].args.args and isinstance(elt.elts[1], ast.Constant)
                        and isinstance(elt.elts[1].value, str)):
                    continue
                call = _calls(elt.elts[0].body)
                if call is None:
                    continue
                func, args, kwargs = call
                words = elt.elts[1].value
                cls = ("tracebacks" if "shapes" in words or "real number" in words or "must be a number" in words
                       else "misleading words" if "(got" in words or "closest" in words
                       else "accepted when it must be refused")
                cases.append({"id": f"tests/{name}[{i}] {func}: {words[:50]}", "cls": cls, "kind": "calc",
                              "func": func, "args": args, "kwargs": kwargs, "expect": "refused", "words": [words]})
    return cases


def _c(cid: str, cls: str, func: str, args: list[str], kwargs: dict[str, str], expect: str = "refused",
       words: tuple[str, ...] = ()) -> dict:
    return {"id": cid, "cls": cls, "kind": "calc", "func": func, "args": args, "kwargs": kwargs, "expect": expect,
            "words": list(words)}


def reproductions() -> list[dict]:
    """Reported calc reproductions (the CLI and verify ones are in cli_cases and verify_cases)."""
    hx = ["7e9", "1e12", "H"]
    return [
        _c("load_config(None)", "tracebacks", "load_config", ["None"], {}, words=("config",)),
        _c("model_params shapes (2,) vs (3,)", "tracebacks", "model_params", ["[32, 40]", "[4096, 5120, 6144]", "32"],
           {}, words=("shapes",)),
        _c("fit_layouts devices as a list", "tracebacks", "fit_layouts", ["'llama 3.1 8b'", "H", "[8, 16]"], {},
           words=("devices",)),
        _c("fit_layouts devices 1e20", "tracebacks", "fit_layouts", ["'llama 3.1 8b'", "H", "10**20"], {},
           words=("devices",)),
        _c("fit_layouts zero_stages (5,)", "tracebacks", "fit_layouts", ["'llama 3.1 8b'", "H", "8"],
           {"zero_stages": "(5,)"}, words=("zero_stage",)),
        _c("train_range(prior='prior')", "tracebacks", "train_range", hx, {"prior": "'prior'"}, words=("prior",)),
        _c("utilization_prior(devices='x')", "tracebacks", "utilization_prior", ["H"], {"devices": "'x'"},
           words=("devices",)),
        _c("owned_usd_per_device_hour shapes", "tracebacks", "owned_usd_per_device_hour", ["[1e4, 2e4]"],
           {"watts": "[700.0, 700.0, 700.0]", "usd_per_kwh": "0.1"}, words=("shapes",)),
        _c("train_bytes ZeRO 0 params (3,) devices (2,)", "accepted when it must be refused", "train_bytes",
           ["[7e9, 8e9, 9e9]"], {"zero_stage": "0", "devices": "[8, 16]"}, words=("shapes",)),
        _c("train_range(usd_per_device_hour='-5')", "silent wrong numbers", "train_range", hx,
           {"usd_per_device_hour": "'-5'"}, words=("usd_per_device_hour",)),
        {**_c("train_range(utilization=0.4) on top of the prior", "silent wrong numbers", "train_range", hx,
              {"utilization": "0.4"}, words=("utilization",)), "passthrough": True},  # into its **flops_options
        _c("train_cost('H10', usd='aws') names the device", "misleading words", "train_cost", ["7e9", "1e12", "'H10'"],
           {"usd_per_device_hour": "'aws'"}, words=("H10",)),
        _c("train_cost(usd_per_device_hour='7e9')", "older surfaces", "train_cost", hx,
           {"usd_per_device_hour": "'7e9'"}, words=("usd_per_device_hour",)),
        {**_c("train_bytes(master='no') is False", "older surfaces", "train_bytes", ["7e9"], {"master": "'no'"},
              "equal", ("master",)), "same": [["7e9"], {"master": "False"}]},
        _c("TRAIN_BUDGET(usd_per_device_hour='abc')", "older surfaces", "udf:TRAIN_BUDGET", hx,
           {"usd_per_device_hour": "'abc'"}, "cell_error", ("abc",)),
        _c("=TRAIN_COST(7E9,1E12,'H10','aws') names the device", "misleading words", "udf:TRAIN_COST",
           ["7e9", "1e12", "'H10'", "'aws'"], {}, "cell_error", ("H10",)),
    ]


LLAMA70 = ["--model", "Llama 3.1 70B", "--device", H]
EST = ["estimate", "--params", "7e9", "--tokens", "1e12", "--device", H]
FIT = ["fit", "--model", "Llama 3.1 8B", "--device", H, "--devices", "8"]
EST_NUMERIC = ("--params", "--tokens", "--devices", "--utilization", "--pue", "--usd-per-kwh", "--occupancy", "--tp",
               "--pp", "--ep", "--cp", "--goodput", "--zero-stage")
FIT_NUMERIC = ("--devices", "--seq-len", "--micro-batch", "--grad-bytes", "--limit", "--memory-gib", "--reserve-gib")
BAD_TEXTS = {"nan": "exit2", "inf": "exit2", "abc": "exit2", "1e309": "exit2", "-1": "exit2_or_json",
             "0": "exit2_or_json"}


def _cli(cid: str, cls: str, argv: list[str], expect: str = "exit2", words: tuple[str, ...] = (), **more) -> dict:
    return {"id": cid, "cls": cls, "kind": "cli", "argv": argv, "expect": expect, "words": list(words), **more}


def cli_cases() -> list[dict]:
    cases = []
    for base, options in ((EST, EST_NUMERIC), (FIT, FIT_NUMERIC)):
        for option in options:
            for text, expect in BAD_TEXTS.items():
                argv = [a for a in base]
                if option in argv:
                    argv[argv.index(option) + 1] = text
                else:
                    argv += [option, text]
                cls = "tracebacks" if text == "abc" else "accepted when it must be refused"
                cases.append(_cli(f"{base[0]} {option} {text}", cls, [*argv, "--json"], expect, (_words(option),)))
    r = "accepted when it must be refused"
    cases += [
        _cli("estimate 70B --tp 7 --devices 7 (64 heads)", r, ["estimate", *LLAMA70, "--tokens", "1e12", "--tp", "7",
                                                              "--devices", "7"], words=("--tp|tensor_parallel",)),
        # refused when the issue was filed; since the lead's 52d68d0, stages may be uneven: valid JSON is handled
        _cli("estimate 70B --pp 3 (80 layers)", r, ["estimate", *LLAMA70, "--tokens", "1e12", "--pp", "3",
                                                     "--devices", "3", "--json"], "exit2_or_json", ("--pp|pipeline",)),
        _cli("estimate Mixtral --ep 3 (8 experts)", r, ["estimate", "--model", "Mixtral 8x7B", "--device", H,
                                                         "--tokens", "1e12", "--ep", "3", "--devices", "3"],
             words=("--ep|expert_parallel",)),
        _cli("estimate --model ''", r, ["estimate", "--model", "", "--device", H, "--tokens", "1e12"]),
        _cli("estimate --price ''", r, [*EST, "--price", ""]),
        _cli("estimate --own ''", r, [*EST, "--own", ""]),
        _cli("estimate --usd-per-kwh nan without --own", r, [*EST, "--usd-per-kwh", "nan"]),
        _cli("estimate --occupancy 0 without --own", r, [*EST, "--occupancy", "0"]),
        _cli("estimate --range --pue nan", r, [*EST, "--range", "--pue", "nan"]),
        _cli("estimate --range --pue 0.5", r, [*EST, "--range", "--pue", "0.5"]),
        _cli("config of 31 heads over 4096", r, ["estimate", "--config", "{tmp}/heads31.json", "--device", H,
                                                 "--tokens", "1e12"]),
        _cli("scenarios row with extra cells", r, ["estimate", "--scenarios", "{tmp}/extra.csv"]),
        _cli("deeply nested config.json", "tracebacks", ["estimate", "--config", "{tmp}/deep.json", "--device", H,
                                                         "--tokens", "1e12"]),
        _cli("qwen2_moe moe_intermediate_size 0", "tracebacks", ["estimate", "--config", "{tmp}/moe0.json",
                                                                 "--device", H, "--tokens", "1e12"]),
        _cli("fit on a config of 1e30 layers", "tracebacks", ["fit", "--config", "{tmp}/layers1e30.json",
                                                              "--device", H, "--devices", "8"]),
        _cli("fit --devices 100000000000000000000", "tracebacks", [*FIT[:5], "--devices", "100000000000000000000"]),
        _cli("fit --limit -5 says the count", "misleading words", [*FIT, "--limit", "-5"], "exit2_or_json"),
        _cli("config larger than the limit names MiB", "misleading words", ["estimate", "--config", "{tmp}/big.json",
                                                                            "--device", H, "--tokens", "1e12"],
             words=("MiB",), forbid=("0 MiB",)),
    ]
    for price in ("nan", "-5", "1e309"):
        cases.append(_cli(f"scenarios price {price} --json", "silent wrong numbers",
                          ["estimate", "--scenarios", f"{{tmp}}/price_{price}.csv", "--json"], "exit2_or_json"))
    for option in ("--config", "--scenarios", "--catalog"):
        argv = (["devices", "--catalog", "{tmp}/fifo"] if option == "--catalog"
                else ["estimate", option, "{tmp}/fifo", "--device", H, "--tokens", "1e12"])
        cases.append(_cli(f"a FIFO as {option}", "hangs", argv, "no_hang", timeout=20))
    cases += [
        _cli("a 1e6-row scenarios CSV", "resources", ["estimate", "--scenarios", "{tmp}/million.csv", "--csv"],
             "bounded", mb=500, timeout=120),
        _cli("fit --devices 1e16", "resources", [*FIT[:5], "--devices", "10000000000000000", "--json"], "bounded",
             mb=500, timeout=120),
        _cli("verify of a 200k-row extra sheet", "resources", ["verify", "--no-recalc", "{tmp}/large200k.xlsm"],
             "bounded", mb=300, timeout=180),
    ]
    return cases


HOSTILE_COMMANDS = {
    "verify": ["verify", "--no-recalc", "{file}"],
    "export": ["export", "{file}", "--out", "{dir}/mail.xlsx"],
    "measure": ["measure", "--backend", "numpy", "--seconds", "0.2", "--into", "{file}"],
}
RESOURCE_FILES = {"zip-bomb", "lying-header", "billion-laughs", "external-entity"}


def hostile_file_cases() -> list[dict]:
    """test_workbook_files.CASES x COMMANDS: exit 2 in one line naming the file."""
    from tests.hostile.test_workbook_files import CASES

    return [_cli(f"{command} on a {case} file", "resources" if case in RESOURCE_FILES else "tracebacks",
                 HOSTILE_COMMANDS[command], "exit2", ("book.xlsm",), hostile=case)
            for case in CASES for command in HOSTILE_COMMANDS]
