"""`trainbudget verify`: the workbook check (check), its input cells (inputs), formula text
(formula_text), macro carriers found part by part from the one carrier table ooxml.carriers
(macros), the VBA source check against the registry (vba_check) and the problem record with its
grouped lines (problems).

May import: template, vba, functions, ooxml, libreoffice and trainbudget.calc.
"""
