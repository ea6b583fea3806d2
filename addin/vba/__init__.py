"""The workbook's VBA project: the MS-OVBA reader (vba), the compound-file writer (cfb) and the
rebuild of xlwings' quickstart project without its sample macro (vbaproject).

May import: nothing of the addin but itself (olefile and xlwings from outside).
"""
