"""planning: the questions the other way round. Devices for a deadline and tokens for a budget
(inverse), ranked plans over devices, prices and counts (rank), and plans side by side from scenario
files (scenarios). Imports compose and every room below it."""
