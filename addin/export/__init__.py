"""`trainbudget export`: the macro-free e-mail copy (mailcopy) and the chart edits it makes (charts).

May import: functions, ooxml, libreoffice and trainbudget.calc.
"""
