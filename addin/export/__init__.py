"""`trainbudget export`: the macro-free e-mail copy (mailcopy) and LibreOffice as engine."""
