"""planning: TODO."""
