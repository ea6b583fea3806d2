"""`trainbudget build`: the template workbook's sheets, blocks, styles and cached values, and the
Devices table's reading and writing (the table the template defines).

May import: functions, vba, ooxml, libreoffice (none of them here) and trainbudget.calc.
"""
