"""The sheets' checks that the step block's layout is one calc's step model takes (calc.step.Layout's
rules and calc.budget's split of a preset, as native formulas over named cells): each is TRUE where
calc takes the layout and FALSE where it refuses it or an input is an error."""

from __future__ import annotations


def step_split_taken(tp: str, pp: str, ep: str, heads: str, layers: str, experts: str) -> str:
    """TRUE where the layout splits the architecture as calc.budget takes it (TP dividing the heads, at most
    one pipeline stage per layer, EP dividing the experts), else FALSE (an error in an input too)."""
    return f"IFERROR(AND(MOD({heads},{tp})=0,{pp}<={layers},MOD({experts},{ep})=0),FALSE)"


def step_cp_taken(cp: str, seq_len: str, flash: str) -> str:
    """TRUE where calc's step model takes the context-parallel degree (it divides the sequence, and is 1
    without flash attention: `flash` FALSE), else FALSE (an error in an input too)."""
    return f"IFERROR(AND(MOD({seq_len},{cp})=0,OR({cp}=1,{flash})),FALSE)"


def step_layout_taken(split: str, cp_ok: str, dp: str, cp: str, ep: str, batch: str, micro: str, pp: str,
                      vpp: str) -> str:
    """TRUE where calc's step model takes the layout, else FALSE (an error in an input too): it splits the
    architecture (`split`: step_split_taken), takes its CP (`cp_ok`: step_cp_taken) and, as
    calc.step.Layout checks its products, the devices are whole replicas of TP x PP x CP (`dp` = devices
    / (TP x PP x CP) whole), EP divides data x context parallel, the global batch (`batch` sequences)
    gives each replica a micro-batch, and VPP is 1 without a pipeline."""
    rules = (split, cp_ok, f"{dp}=INT({dp})", f"MOD({dp}*{cp},{ep})=0", f"{batch}>={dp}*{micro}",
             f"OR({pp}>1,{vpp}=1)")
    return f"IFERROR(AND({','.join(rules)}),FALSE)"
