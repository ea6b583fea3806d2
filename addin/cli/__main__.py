"""`python -m trainbudget.addin.cli`."""

from .main import main

main()
