"""`trainbudget verify`: the workbook check (check), macro carriers found part by part (macros),
the VBA source check against the registry (vba_check) and the problem record (problems).

May import: template, vba, functions, ooxml, libreoffice and trainbudget.calc.
"""
