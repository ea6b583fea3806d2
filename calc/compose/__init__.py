"""compose: TODO."""
