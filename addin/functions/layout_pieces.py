"""The sheets' checks that the step block's layout is one calc's step model takes (calc.step.Layout's
rules and calc.budget's split of a preset, as native formulas over named cells): each is TRUE where
calc takes the layout and FALSE where it refuses it or an input is an error."""

from __future__ import annotations

# the Budget's helper rows holding these checks (the ranges block writes them; the step block reads them)
SPLIT_OK, CP_OK, LAYOUT_OK = "Range_split_ok", "Range_cp_ok", "Range_layout_ok"


def step_split_taken(tp: str, pp: str, ep: str, heads: str, layers: str, experts: str) -> str:
    """TRUE where the layout splits the architecture as calc.budget takes it (TP dividing the heads, at most
    one pipeline stage per layer, EP dividing the experts), else FALSE (an error in an input too)."""
    return f"IFERROR(AND(MOD({heads},{tp})=0,{pp}<={layers},MOD({experts},{ep})=0),FALSE)"


def flash_on(flash: str) -> str:
    """The flash attention input as the step reads it: blank is calc's default, TRUE (as an omitted
    flash_attention argument of TRAIN_STEP is); TRUE or FALSE as typed; text is an error in IF."""
    return f"IF(ISBLANK({flash}),TRUE,{flash})"


def step_cp_taken(cp: str, seq_len: str, flash: str) -> str:
    """TRUE where calc's step model takes the context-parallel degree (it divides the sequence, and is 1
    without flash attention: `flash` FALSE), else FALSE (an error in an input too)."""
    return f"IFERROR(AND(MOD({seq_len},{cp})=0,OR({cp}=1,{flash_on(flash)})),FALSE)"


def step_layout_taken(split: str, cp_ok: str, dp: str, cp: str, ep: str, batch: str, micro: str, pp: str,
                      vpp: str) -> str:
    """TRUE where calc's step model takes the layout, else FALSE (an error in an input too): it splits the
    architecture (`split`: step_split_taken), takes its CP (`cp_ok`: step_cp_taken) and, as
    calc.step.Layout checks its products, the devices are whole replicas of TP x PP x CP (`dp` = devices
    / (TP x PP x CP) whole), EP divides data x context parallel, the global batch (`batch` sequences)
    gives each replica a micro-batch, and VPP is 1 without a pipeline."""
    rules = (split, cp_ok, f"{dp}=INT({dp})", f"MOD({dp}*{cp},{ep})=0", _micro_each(batch, dp, micro),
             _vpp_with_pp(pp, vpp))
    return f"IFERROR(AND({','.join(rules)}),FALSE)"


def _micro_each(batch: str, replicas: str, micro: str) -> str:
    """The global batch (`batch` sequences) gives each of `replicas` data-parallel replicas a micro-batch."""
    return f"{batch}>={replicas}*{micro}"


def _vpp_with_pp(pp: str, vpp: str) -> str:
    """Virtual pipeline stages only with a pipeline."""
    return f"OR({pp}>1,{vpp}=1)"


def step_count_free_taken(split: str, cp_ok: str, pp: str, vpp: str, batch: str, ep: str, micro: str) -> str:
    """TRUE where calc's step model takes the layout at some device count, as a deadline's search of counts
    (k x TP x PP x CP x EP devices, data parallel k x EP) needs: the rules of step_layout_taken that no count
    changes (the split, CP, VPP only with PP) and a micro-batch per replica at the fewest (`batch` sequences
    >= EP x `micro`); `split` and `cp_ok` the TRUE / FALSE rows of step_split_taken and step_cp_taken."""
    return f"IF({split},IF({cp_ok},AND({_vpp_with_pp(pp, vpp)},{_micro_each(batch, ep, micro)}),FALSE),FALSE)"
