"""base: TODO."""
