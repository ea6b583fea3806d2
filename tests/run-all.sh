#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine, then runs every test.
# LibreOffice (headless Calc) is the spreadsheet engine the workbook tests recalculate with;
# Gnumeric (ssconvert --recalc) is a second one the e-mail copy must compute the same in. The Lite
# edition runs in real Pyodide under Node.js (tests/lite_runtime/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
apt_packages=(libreoffice-calc-nogui gnumeric fonts-crosextra-carlito poppler-utils)
missing=()
for p in "${apt_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
python3 -m pip install -q -e '.[test]'
# The xlwings Lite runtime (Pyodide, its numpy, the xlwings wheel) under .cache/lite-runtime/, for
# tests/addin/lite/test_lite_runtime.py; Node.js from Debian if missing. Fast when already there.
bash tests/lite_runtime/install.sh
python3 -m ruff check .
# Every core (pytest-xdist), a whole file per worker at a time: a file's module-scoped LibreOffice
# recalculation runs once, and each LibreOffice run has its own temporary profile (addin/libreoffice.py).
python3 -m pytest -n auto --dist loadfile "$@"
