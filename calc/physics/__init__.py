"""physics: bytes and FLOPs of a step. Training FLOPs per token (flops), activation bytes
(activations), memory per device by part (memory), uneven pipeline stages (stages) and the layouts that
fit a device (fit, its search options fit_search, the rule tying expert to data and context
parallel: parallel). Imports base, model and hardware."""
