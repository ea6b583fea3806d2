"""trainbudget.addin: everything that faces Excel, files or a terminal.

Rooms, top to bottom (a room imports only rooms below it; tests/test_rooms.py keeps it so):
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

# The template ships beside the package in the repository: workbook/TrainingBudget.xlsm, found
# from this file so that no command depends on the current directory.
TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "workbook" / "TrainingBudget.xlsm"
