"""prior: TODO."""
