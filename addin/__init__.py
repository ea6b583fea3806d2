"""trainbudget.addin: everything that faces Excel, files or a terminal.

Rooms, top to bottom (a room imports only rooms below it; tests/project/test_rooms.py keeps it so):
- cli/: the `trainbudget` command, a thin layer over the rest.
- udf/: the desktop xlwings UDFs and the conversion of cell values in and out.
- export/: the macro-free e-mail copy and its chart edits.
- verify/: `trainbudget verify`: macro carriers, the VBA source check, the problems.
- measure/: the matmul rate of this machine and the Devices row it records.
- template/: `trainbudget build`: the workbook's sheets, blocks, styles, the Devices table's I/O.
- vba/: the VBA project reader and rebuild (MS-OVBA, CFB).
- libreoffice.py: LibreOffice as engine (recalc and PDF), for verify, export and tests.
- functions/: the registry (every Excel function defined once), native forms, the rewriter, docs.
- ooxml/: the package layer every workbook file goes through (open, parse, edit, write).
Every room builds on trainbudget.calc, which imports nothing of the addin.
"""

from pathlib import Path

TEMPLATE_NAME = "TrainingBudget.xlsm"
# The template as shipped: the wheel carries the repository's one committed copy,
# workbook/TrainingBudget.xlsm, as package data trainbudget/addin/data/TrainingBudget.xlsm
# (pyproject.toml maps the package trainbudget.addin.data to workbook/); an editable install or a
# checkout finds it in workbook/ itself. Found from this file, so no command depends on the current folder.
_PACKAGED = Path(__file__).resolve().parent / "data" / TEMPLATE_NAME
_CHECKOUT = Path(__file__).resolve().parent.parent / "workbook" / TEMPLATE_NAME
TEMPLATE_PATH = _PACKAGED if _PACKAGED.is_file() else _CHECKOUT
