"""The package layer: every read and write of a workbook file (.xlsx/.xlsm) goes through here."""
