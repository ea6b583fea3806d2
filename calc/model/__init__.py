"""model: what is trained. A decoder-only transformer's shape and its parameter counts, the packaged
presets (data/models.csv; shapes), and a shape read from a local Hugging Face config.json (hf_config).
Imports base only."""
