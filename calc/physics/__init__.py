"""physics: TODO."""
