"""money: what it costs. Cloud prices by provider and plan (data/prices.csv; prices), owned
hardware as a price (owned), and the seed's totals: hours, device-hours, cost, energy and devices
needed from FLOPs and a device's rate (totals). Imports base, model, hardware and physics."""
