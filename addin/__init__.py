"""trainbudget.addin: everything that faces Excel, files or a terminal.

Rooms, in the order data flows:
- functions/: the registry (every Excel function defined once), native forms, the rewriter, docs.
- udf/: the xlwings UDFs and the conversion of cell values in and out.
- ooxml/: the package layer every workbook file goes through (open, parse, edit, write).
- workbook/: the template (build), its sheets, the Devices table, verify and the VBA reader.
- measure/: the matmul rate of this machine and the Devices row it records.
- export/: the macro-free e-mail copy, recalculated by LibreOffice.
- cli/: the `trainbudget` command, a thin layer over the rest.
"""

from pathlib import Path

# The template ships beside the package in the repository: workbook/TrainingBudget.xlsm, found
# from this file so that no command depends on the current directory.
TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "workbook" / "TrainingBudget.xlsm"
