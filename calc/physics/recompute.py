"""The recompute names every door takes (train_flops, activation_bytes, fit, the step model, their Excel
functions), in one place below the modules that read them: none, selective, op, full, offload."""

from __future__ import annotations

# fewest recomputed FLOPs first (calc.physics.flops), then "offload": full recompute with each layer's
# checkpointed input kept in host memory, not the device's (MaxText's remat_policy=custom with
# decoder_layer_input=offload, github.com/AI-Hypercomputer/maxtext src/MaxText/configs/base.yml, as its
# tpu-recipes v6e Llama 3.1 70B recipe runs; Megatron-Core's TransformerConfig.cpu_offloading). fit lists
# it only where full recompute does not fit: it moves every layer input over the host link each step.
RECOMPUTE_ORDER = ("none", "selective", "op", "full", "offload")
# what the step model (calc.step: none, selective, full) times a fit recompute as: op-level selective
# checkpointing recomputes about what Korthikanti et al. 2022 s.5's selective does; the offloaded
# inputs' copies overlap the compute (MaxText's tpu-recipes v6e Llama 3.1 70B, timed as full: within 4%
# of its logged step, calc/data/steptime_measured.csv)
TIMED_AS = {"none": "none", "selective": "selective", "op": "selective", "full": "full", "offload": "full"}
