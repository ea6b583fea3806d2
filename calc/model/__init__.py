"""model: TODO."""
