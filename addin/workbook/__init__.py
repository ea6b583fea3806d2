"""The template workbook: build, its sheets, the Devices table, verify and the VBA reader."""
