"""base: what every room stands on. Counts as people write them (units), argument checks and the
error classes with a value shown as a message shows it (checks, errors), arithmetic that gives the same
value for a float or an array (arith), bounded reading of a user's text file (textfile) and the quick
constructor of calc's frozen dataclasses (fastinit). Imports numpy and the standard library only: no
other room."""
