"""hardware: what it runs on. The device catalog, one sourced row per rate (data/devices.csv;
catalog), and a device's usable memory: capacity less the reserve (capacity). Imports base only."""
