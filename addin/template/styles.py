"""The workbook's look: named fonts (LibreOffice renders an unnamed bold font as serif),
input and result fills, and the number formats a finance reader expects."""

from __future__ import annotations

from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side

FONT = "Calibri"
BODY = Font(name=FONT, size=11)
BOLD = Font(name=FONT, size=11, bold=True)
TITLE = Font(name=FONT, size=16, bold=True, color="1F3864")
HEADING = Font(name=FONT, size=12, bold=True, color="1F3864")
NOTE = Font(name=FONT, size=9, italic=True, color="595959")
INPUT_FONT = Font(name=FONT, size=11, color="0000C0")
ERROR_FONT = Font(name=FONT, size=11, bold=True, color="C00000")  # a refused input's message
ERROR_NOTE = Font(name=FONT, size=9, bold=True, color="C00000")  # the same, wrapped in a narrow column

INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")    # pale yellow: type here
RESULT_FILL = PatternFill("solid", fgColor="E2EFDA")   # pale green: computed
HEADER_FILL = PatternFill("solid", fgColor="D9E1F2")
THIN = Side(style="thin", color="BFBFBF")
BOX = Border(left=THIN, right=THIN, top=THIN, bottom=THIN)
UNLOCKED = Protection(locked=False)
WRAP = Alignment(wrap_text=True, vertical="top")
RIGHT = Alignment(horizontal="right", indent=1)
LEFT = Alignment(horizontal="left", indent=1)  # a figure kept clear of the column to its right
SHRINK = Alignment(shrink_to_fit=True)  # a text that must show whole in its cell
TOP = Alignment(vertical="top")  # a label level with the first line of its wrapped note
TOP_RIGHT = Alignment(vertical="top", horizontal="right", indent=1)
BOTTOM = Alignment(vertical="bottom")  # a label level with the line written on beside it

# Number formats; GB is 1e9 bytes (a job's memory); a device's memory is a capacity in GiB.
COUNT = "#,##0"
# TRUE / FALSE as every engine shows them: Excel shows a boolean as TRUE or FALSE whatever its format, while
# LibreOffice shows one read from an .xlsx as 1 or 0 unless a format words it (its PDF of the Budget did).
# For formula cells only: LibreOffice saves a boolean under this format as the number 1 or 0, which an
# input read back as TRUE / FALSE (Flash attention) must not become
BOOLEAN = '"TRUE";"TRUE";"FALSE"'
BILLIONS = '#,##0.0,,,"B"'     # 6.74e9 -> 6.7B (each trailing comma divides by 1,000)
TRILLIONS = '#,##0.00,,,,"T"'  # 1.56e13 -> 15.60T
FLOPS = "0.00E+00"
GB = '#,##0.0 "GB"'
GIB = '#,##0.0 "GiB"'  # device memory as sold ("80GB" of HBM is 80 GiB)
HOURS = '#,##0.0 "h"'
DAYS = '#,##0.00 "days"'
DEVICE_HOURS = '#,##0 "device-h"'
USD = '"$"#,##0'
USD_RATE = '"$"#,##0.00'
KWH = '#,##0 "kWh"'
PERCENT = "0%"
# Three significant digits for small (measured) rates: 0.206, 4.38, 19.5, 989.5 TFLOP/s.
TFLOPS = '[<1]0.000 "TFLOP/s";[<10]0.00 "TFLOP/s";#,##0.0 "TFLOP/s"'
RATIO = "0.00"
