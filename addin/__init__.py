"""trainbudget.addin: everything that faces Excel, files or a terminal (UDFs, workbook, CLI)."""

from pathlib import Path

TEMPLATE_PATH = Path("workbook") / "TrainingBudget.xlsm"  # the template, relative to the repository
