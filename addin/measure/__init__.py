"""`trainbudget measure`: backends, the timing core, and the Devices row it records (into)."""
