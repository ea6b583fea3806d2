"""Native-Excel pieces of the planner's functions (calc.planning.rank): TRAIN_DEVICES_FOR_DAYS and
TRAIN_TOKENS_FOR_BUDGET, written once here and spliced into the registry.

Devices for a deadline (calc.devices_for_days): the count whose hours fit the days,
ROUNDUP(device-hours / (24 · days)), with calc's 1E-12 so an exact fit is not rounded up. Memory
is a separate row (the Budget sheet's "Deadline and budget" block takes the larger of this and the
devices that hold the model states: `states_devices`, ZeRO-3 in usable memory (calc/hardware/capacity.py), the
capacity in GiB less the larger of RESERVE_GIB and RESERVE_SHARE of it; Rajbhandari et al. 2020,
arXiv:1910.02054, §5: stage 3 shards weights, gradients and optimizer states). Tokens for a budget
(calc.tokens_for_budget): INT(USD / (USD per device-hour · device-hours per token)).
"""

from __future__ import annotations

from ... import calc
from ...calc import RESERVE_GIB, RESERVE_SHARE

# Bytes per parameter of a full fine-tune with AdamW (calc.physics.memory: bf16 weights and gradients,
# fp32 Adam moments and master copy): 2 + 2 + 8 + 4 = 16, all sharded under ZeRO-3.
STATE_BYTES = calc.WEIGHT_BYTES + calc.GRAD_BYTES + calc.OPTIMIZER_BYTES["adamw"] + calc.MASTER_BYTES
USABLE_GIB = (f"({{device:memory_gib}}-MAX({RESERVE_GIB!r},"
              f"{RESERVE_SHARE!r}*{{device:memory_gib}}))")
EXACT = "(1-1E-12)"


def devices_for_days(gpu_hours: str) -> str:
    """Template: devices for {days} days given the device-hours template `gpu_hours`."""
    return f"MAX(ROUNDUP({gpu_hours}/(24*{{days}})*{EXACT},0),1)"


def states_devices() -> str:
    """Template: devices whose usable memory holds a full fine-tune's model states of {params}
    under ZeRO-3 with AdamW (calc.devices_for_days with zero_stage=3, activations aside)."""
    return f"MAX(ROUNDUP({STATE_BYTES!r}*{{params}}/({USABLE_GIB}*2^30)*{EXACT},0),1)"


def tokens_for_budget(gpu_hours_per_token: str) -> str:
    """Template: whole tokens {usd} buys at {usd_per_device_hour}, given device-hours per token."""
    # INT, not ROUNDDOWN: LibreOffice's ROUNDDOWN keeps about 12 significant digits (13570285714285.7
    # gives 13570285714300), INT floors exactly; the two agree in Excel for a positive figure.
    return f"INT({{usd}}/({{usd_per_device_hour}}*{gpu_hours_per_token}))"


def tokens_at_cost(usd: str, tokens: str, cost: str) -> str:
    """Most whole tokens `usd` buys where `tokens` tokens cost `cost` and the cost grows linearly with the
    tokens (the step model's: its utilization does not move with them), as calc.tokens_for's floor."""
    return f"INT({usd}*{tokens}/{cost})"
