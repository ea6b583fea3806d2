"""The xlwings Lite edition (Mac, Windows, Excel on the web): `trainbudget lite` writes a macro-free
workbook whose webextension part carries a main.py generated from this package (calc and its
data bundled, one Lite function per registry entry) and a requirements.txt. runtime.py is what
runs inside Lite (numpy and calc only); spec.py, bundle.py, webext.py and workbook.py build the file.

May import: functions, template, ooxml, libreoffice and trainbudget.calc; not udf (beside it) nor
export, verify, measure or cli.
"""
