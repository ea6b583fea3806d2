"""xlwings UDFs (udfs) and the conversion of cell values in and out of them (cells)."""
