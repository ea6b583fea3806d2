"""money: TODO."""
