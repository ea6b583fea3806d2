"""hardware: TODO."""
