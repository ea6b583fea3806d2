"""Census of hostile inputs: run the catalogue (tests/hostile/census_cases.py, about 1,100 cases)
against a checkout and print, per class, cases / handled / not handled / new inputs.

    python tests/hostile/census.py [CHECKOUT] [--sample N] [--only TEXT] [--json OUT] [--list]

CHECKOUT (default: this one) is run with its own interpreter (CHECKOUT/.venv/bin/python), every
case in a subprocess with a timeout: calc cases in groups (one interpreter per group, a 10 s alarm
per case), each command-line case in its own process (peak RSS from wait4). A case whose entry
point (calc function, argument, command or option) the checkout lacks is a "new input" unless the
input existed then under another name (census_cases.ALIASES), when it is run by that name. The
files cases read (configs, scenarios CSVs, a FIFO, hostile and seeded workbooks) are made here,
with this checkout's code, from the checkout's own built template. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository root: run as a script, `tests` imports

from tests.hostile import _MEASURE, census_cases as catalogue  # noqa: E402

GROUP = 150  # calc cases per interpreter
RUNNER = r'''
import dataclasses, inspect, json, math, signal, sys
import numpy as np
from trainbudget import calc
H = H100 = "H100 SXM, BF16 tensor core, dense"
ALIASES = json.loads(sys.argv[1])
def numbers(x, depth=0):
    if depth > 6: return
    if isinstance(x, (bool, str, type(None))): return
    if isinstance(x, (int, float, np.number)): yield float(x); return
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fiu": yield from (float(v) for v in x.ravel()[:10000])
        return
    if isinstance(x, dict): x = list(x.values())
    elif dataclasses.is_dataclass(x): x = [getattr(x, f.name) for f in dataclasses.fields(x)]
    elif hasattr(x, "_asdict"): x = list(x._asdict().values())
    if isinstance(x, (list, tuple)):
        for v in x[:1000]: yield from numbers(v, depth + 1)
def target(func):
    if func.startswith("udf:"):
        from trainbudget.addin.udf import udfs
        return getattr(udfs, func[4:], None)
    return getattr(calc, func, None) if func in calc.__all__ else None
def resolve(func, kwargs, f, passthrough=False):
    params = inspect.signature(f).parameters
    names = set(params)
    if passthrough and any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return dict(kwargs)
    out = {}
    for k, v in kwargs.items():
        if k in names: out[k] = v
        elif ALIASES.get(f"{func}.{k}", ALIASES.get(k)) in names: out[ALIASES.get(f"{func}.{k}", ALIASES.get(k))] = v
        else: return None
    return out
def call(func, args, kwargs, passthrough=False):
    f = target(func)
    k = resolve(func, kwargs, f, passthrough)
    return f(*[eval(a) for a in args], **{n: eval(v) for n, v in k.items()})
def alarm(*_): raise TimeoutError("no answer in 10 s")
signal.signal(signal.SIGALRM, alarm)
for case in json.loads(sys.stdin.read()):
    f = target(case["func"])
    if f is None or resolve(case["func"], case["kwargs"], f, case.get("passthrough")) is None:
        print(json.dumps([case["id"], "new input", ""])); continue
    signal.alarm(10)
    try:
        got = call(case["func"], case["args"], case["kwargs"], case.get("passthrough"))
        signal.alarm(0)
    except calc.TrainingBudgetError as e:
        signal.alarm(0)
        text = str(e)
        if case["expect"] in ("refused", "refused_or_finite"):
            ok = all(any(a in text for a in w.split("|")) for w in case["words"])
            print(json.dumps([case["id"], "handled" if ok else "misleading words", text[:160]]))
        else:
            print(json.dumps([case["id"], "refused", text[:160]]))
        continue
    except BaseException as e:
        signal.alarm(0)
        print(json.dumps([case["id"], "timeout" if isinstance(e, TimeoutError) else "traceback",
                          f"{type(e).__name__}: {str(e)[:120]}"]))
        continue
    expect = case["expect"]
    if expect == "refused":
        print(json.dumps([case["id"], "accepted", repr(got)[:120]])); continue
    if expect == "cell_error":
        ok = isinstance(got, str) and got.startswith(("#VALUE!", "#N/A")) and all(
            any(a in got for a in w.split("|")) for w in case["words"])
        print(json.dumps([case["id"], "handled" if ok else "accepted", repr(got)[:160]])); continue
    if expect == "equal":
        try:
            same = call(case["func"], *case["same"])
            equal = bool(np.all(np.asarray(list(numbers(got))) == np.asarray(list(numbers(same)))))
        except Exception as e:
            equal = False
        print(json.dumps([case["id"], "handled" if equal else "read wrongly", ""])); continue
    values = list(numbers(got))
    bad = [v for v in values if math.isnan(v) or (math.isinf(v) and not case.get("allow_inf"))]
    print(json.dumps([case["id"], "non-finite output" if bad else "handled", repr(got)[:80]]))
'''


def python_of(checkout: Path) -> str:
    py = checkout / ".venv" / "bin" / "python"
    return str(py if py.exists() else sys.executable)


def run_calc(py: str, cases: list[dict], cwd: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for start in range(0, len(cases), GROUP):
        group = cases[start:start + GROUP]
        try:
            proc = subprocess.run([py, "-c", RUNNER, json.dumps(catalogue.ALIASES)], input=json.dumps(group),
                                  capture_output=True, text=True, timeout=60 + 11 * len(group), cwd=cwd)
            lines = proc.stdout.splitlines()
        except subprocess.TimeoutExpired as e:
            text = e.stdout or b""
            lines = (text.decode() if isinstance(text, bytes) else text).splitlines()
        for line in lines:
            cid, outcome, detail = json.loads(line)
            out[cid] = (outcome, detail)
        for case in group:  # a case after a crash of the whole interpreter
            out.setdefault(case["id"], ("traceback", "the interpreter died"))
    return out


class Cli:
    """Runs the checkout's command line; knows its commands and options (from --help)."""

    def __init__(self, py: str, cwd: Path):
        self.py, self.cwd, self.helps = py, cwd, {}

    def has(self, argv: list[str]) -> bool:
        command = argv[0]
        if command not in self.helps:
            proc = subprocess.run([self.py, "-m", "trainbudget.addin.cli", command, "--help"], capture_output=True,
                                  text=True, cwd=self.cwd, timeout=60)
            self.helps[command] = proc.stdout if proc.returncode == 0 else None
        text = self.helps[command]
        return text is not None and all(f"{a} " in text or f"{a}\n" in text or f"{a}," in text or f"{a}=" in text
                                        for a in argv[1:] if a.startswith("--"))

    def run(self, argv: list[str], timeout: float) -> tuple[int | None, str, str, float]:
        """(exit status or None on timeout, stdout, stderr, peak RSS MB)."""
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
                tempfile.NamedTemporaryFile("r") as peak:
            # through a small fresh interpreter (tests.hostile's _MEASURE): a child started from this large
            # process would report this process's peak RSS as its own
            proc = subprocess.Popen([self.py, "-c", _MEASURE, self.py, "-m", "trainbudget.addin.cli", *argv],
                                    stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.cwd,
                                    start_new_session=True, env={**os.environ, "TB_PEAK_FILE": peak.name})
            deadline, status = time.monotonic() + timeout, None
            while time.monotonic() < deadline:
                pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                time.sleep(0.02)
            else:
                most = max((_peak_so_far(int(c)) for c in _children(proc.pid)), default=0.0)
                os.killpg(proc.pid, 9)
                os.wait4(proc.pid, 0)
                return None, "", "", most
            out.seek(0)
            err.seek(0)
            return os.waitstatus_to_exitcode(status), out.read(), err.read(), int(peak.read() or 0) / 1024


def _children(pid: int) -> list[str]:
    """The process ids `pid` started (Linux /proc; none where unknown)."""
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def _peak_so_far(pid: int) -> float:
    """A running process's peak RSS so far (MB), from /proc (0 where unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _strict_json(text: str) -> bool:
    def refuse(name):
        raise ValueError(name)
    try:
        json.loads(text, parse_constant=refuse)
        return True
    except ValueError:
        return False


def judge_cli(case: dict, rc: int | None, out: str, err: str, mb: float) -> tuple[str, str]:
    if rc is None and case["expect"] == "bounded" and 0 < mb < case["mb"]:  # slow, but within its memory so far
        return "handled", f"stopped at the {case['timeout']} s timeout with a peak of {mb:.0f} MB so far"
    if rc is None:
        return "timeout", f"no answer in {case.get('timeout', 60)} s" + (f" (peak {mb:.0f} MB)" if mb else "")
    if "Traceback" in err:
        return "traceback", err.strip().splitlines()[-1][:160]
    one_line = len(err.strip().splitlines()) == 1
    words = (all(any(a in err for a in w.split("|")) for w in case["words"])
             and not any(w in err for w in case.get("forbid", ())))
    expect = case["expect"]
    if expect in ("exit2", "exit2_or_json") and rc == 2:
        if not one_line:
            return "traceback", f"{len(err.strip().splitlines())} lines on stderr"
        return ("handled", err.strip()[:160]) if words else ("misleading words", err.strip()[:160])
    if expect == "exit2":
        return "accepted", f"exit {rc}"
    if expect in ("exit2_or_json", "json"):
        if rc != 0:
            return "wrong exit", f"exit {rc}: {err.strip()[:120]}"
        return ("handled", "") if _strict_json(out) else ("invalid JSON", out[:120])
    if expect == "no_hang":
        return "handled", f"exit {rc}"
    if expect == "bounded":
        if rc not in (0, 1, 2):
            return "wrong exit", f"exit {rc}: {err.strip()[-120:]}"
        return ("handled", f"{mb:.0f} MB") if mb < case["mb"] else ("over memory", f"{mb:.0f} MB > {case['mb']}")
    return "unknown expectation", expect


def make_files(tmp: Path, py: str, cwd: Path) -> Path:
    """The files cases read; returns the checkout's built template."""
    subprocess.run([py, "-m", "trainbudget.addin.cli", "build", "--out", str(tmp / "TB.xlsm")], check=True,
                   capture_output=True, cwd=cwd, timeout=300)
    configs = catalogue.ROOT / "tests" / "data" / "configs"
    llama = json.loads((configs / "Llama-3.1-8B.json").read_text())
    (tmp / "heads31.json").write_text(json.dumps({**llama, "num_attention_heads": 31, "num_key_value_heads": 31}))
    (tmp / "layers1e30.json").write_text(json.dumps({**llama, "num_hidden_layers": 10**30}))
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "big.json").write_text(json.dumps({**llama, "pad": "x" * 2_000_000}))
    moe = json.loads((configs / "Mixtral-8x7B-v0.1.json").read_text())
    (tmp / "moe0.json").write_text(json.dumps({**moe, "model_type": "qwen2_moe", "moe_intermediate_size": 0,
                                               "num_experts": 8, "num_experts_per_tok": 2,
                                               "shared_expert_intermediate_size": 0}))
    head = "name,params,tokens,device,devices,utilization,price,own\n"
    for price in ("nan", "-5", "1e309"):
        (tmp / f"price_{price}.csv").write_text(head + f'A,7e9,1e12,"{catalogue.H}",8,0.4,{price},\n')
    (tmp / "extra.csv").write_text(head + f'A,7e9,1e12,"{catalogue.H}",8,0.4,2.5,,surprise,more\n')
    with open(tmp / "million.csv", "w") as f:
        f.write(head)
        f.writelines(f'p{i},7e9,1e12,"{catalogue.H}",8,0.4,2.5,\n' for i in range(1_000_000))
    os.mkfifo(tmp / "fifo")
    from tests.addin.verify.test_verify_large import large_workbook

    large_workbook(tmp / "TB.xlsm", tmp / "large200k.xlsm", 200_000)
    return tmp / "TB.xlsm"


def hostile_file(case: str, folder: Path, built: Path, tmp: Path) -> Path:
    from tests import hostile
    from tests.hostile.test_workbook_files import _make

    bomb = tmp / "bomb.xlsm"
    if not bomb.exists():
        hostile.zip_bomb(bomb)
    folder.mkdir(parents=True, exist_ok=True)
    return _make(case, folder, built, bomb)


def verify_cases(built: Path, tmp: Path) -> list[dict]:
    """test_verify_inputs.CASES (and its external-link parts) seeded into copies of the checkout's own
    template; a case whose sheet (or defined name) the template lacks is a new input."""
    from tests.addin.verify.test_verify_inputs import CASES, _with_external_link
    from tests.xlsx_edit import edit_cell

    cases = []
    book = zipfile.ZipFile(built).read("xl/workbook.xml").decode()
    for i, (cid, ((sheet, ref), change, _words)) in enumerate(CASES.items()):
        path = tmp / f"seeded{i}.xlsm"
        shutil.copyfile(built, path)
        case = {"id": f"verify: {cid}", "cls": "verify does not read the inputs", "kind": "verify",
                "file": str(path), "where": f"{sheet}!{ref}"}
        try:
            if f'name="{sheet}"' not in book or ("currency" in cid and "USD_rate" not in book):
                raise KeyError(sheet)
            edit_cell(path, sheet, ref, change)
        except Exception:  # the sheet (or cell) is not in that template: no such input then
            case["new"] = True
        cases.append(case)
    for rels in (True, False):
        path = tmp / f"link{rels}.xlsm"
        shutil.copyfile(built, path)
        _with_external_link(path, rels)
        cases.append({"id": f"verify: external-link part (relationships {'kept' if rels else 'missing'})",
                      "cls": "verify does not read the inputs", "kind": "verify", "file": str(path),
                      "where": "xl/externalLinks/externalLink1.xml"})
    return cases


def census(checkout: Path, sample: int | None, seed: int = 19, only: str | None = None) -> list[tuple[dict, str, str]]:
    import trainbudget.calc as here

    py = python_of(checkout)
    results: list[tuple[dict, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="tb-census-") as tmp_name:
        tmp = Path(tmp_name)
        built = make_files(tmp, py, tmp)
        calc_cases = catalogue.grid(here) + catalogue.from_tests() + catalogue.reproductions()
        cli_cases = catalogue.cli_cases() + catalogue.hostile_file_cases()
        v_cases = verify_cases(built, tmp)
        if only:
            calc_cases, cli_cases, v_cases = ([c for c in x if only in c["id"]]
                                              for x in (calc_cases, cli_cases, v_cases))
        if sample:
            rng = random.Random(seed)
            everything = calc_cases + cli_cases + v_cases
            keep = {c["id"] for c in rng.sample(everything, min(sample, len(everything)))}
            calc_cases, cli_cases, v_cases = ([c for c in x if c["id"] in keep]
                                              for x in (calc_cases, cli_cases, v_cases))
        got = run_calc(py, calc_cases, tmp)
        results += [(c, *got[c["id"]]) for c in calc_cases]
        cli = Cli(py, tmp)
        for case in cli_cases:
            argv = [a.replace("{tmp}", str(tmp)) for a in case["argv"]]
            if "hostile" in case:
                folder = tmp / "hostile" / f"{case['hostile']}-{argv[0]}"
                shutil.rmtree(folder, ignore_errors=True)
                path = hostile_file(case["hostile"], folder, built, tmp)
                argv = [a.replace("{file}", str(path)).replace("{dir}", str(folder)) for a in argv]
            if not cli.has(argv):
                results.append((case, "new input", ""))
                continue
            results.append((case, *judge_cli(case, *cli.run(argv, case.get("timeout", 60)))))
        for case in v_cases:
            if case.get("new") or not cli.has(["verify", "--no-recalc", "--json"]):
                results.append((case, "new input", ""))
                continue
            rc, out, err, _ = cli.run(["verify", "--no-recalc", "--json", case["file"]], 120)
            try:
                found = [p["where"] for p in json.loads(out) if p.get("severity", "error") == "error"]
            except ValueError:
                found = []
            outcome = "handled" if rc == 1 and case["where"] in found else (
                "not a finding" if rc in (0, 1) else "refused as unreadable" if rc == 2 else "wrong exit")
            results.append((case, outcome, (err.strip()[:120] if rc == 2 else ", ".join(found[:3]))))
    return results


def table(results: list[tuple[dict, str, str]]) -> str:
    rows = [f"{'class':<34} {'cases':>6} {'handled':>8} {'not handled':>12} {'new input':>10}"]
    total = Counter()
    for cls in catalogue.CLASSES:
        mine = [o for c, o, _ in results if c["cls"] == cls]
        n = Counter(cases=len(mine), handled=mine.count("handled"), new=mine.count("new input"))
        n["not"] = n["cases"] - n["handled"] - n["new"]
        total.update(n)
        rows.append(f"{cls:<34} {n['cases']:>6} {n['handled']:>8} {n['not']:>12} {n['new']:>10}")
    rows.append(f"{'all':<34} {total['cases']:>6} {total['handled']:>8} {total['not']:>12} {total['new']:>10}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=str(catalogue.ROOT))
    parser.add_argument("--sample", type=int, help="run a random sample of this many cases (seed 19)")
    parser.add_argument("--json", help="write every case's outcome here")
    parser.add_argument("--list", action="store_true", help="print every case not handled")
    parser.add_argument("--only", help="run only the cases whose id holds this text")
    ns = parser.parse_args()
    start = time.monotonic()
    results = census(Path(ns.checkout).resolve(), ns.sample, only=ns.only)
    print(f"census of {ns.checkout} ({len(results)} cases, {time.monotonic() - start:.0f} s"
          f"{f', a sample of {ns.sample}' if ns.sample else ''}):")
    print(table(results))
    if ns.list:
        for case, outcome, detail in results:
            if outcome not in ("handled", "new input"):
                print(f"  [{case['cls']}] {case['id']}: {outcome} {detail}")
    if ns.json:
        Path(ns.json).write_text(json.dumps([{"id": c["id"], "class": c["cls"], "outcome": o, "detail": d}
                                             for c, o, d in results], indent=1))


if __name__ == "__main__":
    main()
