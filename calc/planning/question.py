"""The planner's question (calc.rank_plans): the job, the deadline, the money and the layout search,
checked once when made. Units: tokens, days, USD, counts; `global_batch` in sequences of `seq_len`
tokens (Megatron's --global-batch-size)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..base.checks import flag, fraction, positive, whole
from ..base.errors import TrainingBudgetError
from ..compose.budget import Owned
from ..compose.job import job as make_job
from ..hardware.catalog import DeviceTable, catalog
from ..model.shapes import ModelPreset
from ..physics.fit import DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LEN, Search
from ..physics.memory import check_trainable
from .inverse import _case, node_size
from .search import max_plan_devices

__all__ = ["Asked", "PlanQuestion"]


@dataclass(frozen=True)
class Asked:
    """The question, checked: calc.job's names every plan shares (`base`), the model's preset (None:
    parameters alone), the deadline (days) and its case, the utilization asked ("step", "prior" or a
    share), the layout search (sequence length, global batch, method), the budget (USD), whether a
    commitment's capacity is already committed, the most devices planned (`cap`), and the node
    (None: each offering's instance)."""

    base: dict[str, Any]
    preset: ModelPreset | None
    days: float
    case: str
    utilization: Any
    search: Search
    budget_usd: float | None
    committed: bool
    cap: float
    node: int | None


@dataclass(frozen=True)
class PlanQuestion:
    """What calc.rank_plans answers: `tokens` to train within `days` days, on a `model` (a preset; its
    shape lets the step model time each layout) or `params` alone; on every device of `table` (None:
    the catalog; its 16-bit row of each hardware with memory) or those named in `devices`; at every
    price offering as sold (calc.planning.offers; spot prices only with `spot`), or one `price` given
    (USD per device-hour or PROVIDER:PLAN[:OFFERING]), plus `own` hardware; at `utilization` ("step":
    the step model; "prior"; or a share) and `goodput` (as Job.goodput); the deadline held at `case`
    ("expected" or "high"); counts multiples of `node` too (None: each offering's instance); a
    `budget_usd` (None: none); `global_batch` sequences of `seq_len` tokens; `committed`: 1- and 3-year
    prices' capacity is already committed; `method` and `trainable` as calc.train_memory's.

    The days, case, node, budget, batch and layout search (calc.physics.fit_search.Search) and the names
    every plan's job shares (calc.job) are checked once, when made, each message naming its field; `checked`
    is the checked form (Asked)."""

    tokens: Any
    days: Any
    _: KW_ONLY
    params: Any = None
    model: ModelPreset | None = None
    devices: Any = None
    price: Any = None
    own: Owned | None = None
    utilization: Any = "step"
    case: str = "expected"
    node: Any = None
    budget_usd: Any = None
    goodput: Any = None
    table: DeviceTable | None = None
    global_batch: Any = DEFAULT_GLOBAL_BATCH
    seq_len: Any = DEFAULT_SEQ_LEN
    spot: bool = False
    committed: bool = False
    method: str = "full"
    trainable: Any = None
    flash_attention: bool = True
    checked: Asked = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        table = catalog() if self.table is None else self.table
        node = None if self.node is None else int(node_size(self.node))
        batch, seq = int(whole("global_batch", self.global_batch)), int(whole("seq_len", self.seq_len))
        flash = flag("flash_attention", self.flash_attention)
        search = Search(seq_len=seq, global_batch=batch, method=self.method, trainable=self.trainable,
                        flash_attention=flash)
        base = {"tokens": self.tokens, "goodput": self.goodput, "table": table, "method": self.method,
                "trainable": self.trainable, "seq_len": float(seq), "global_batch_tokens": float(batch * seq),
                "flash_attention": flash,
                **({"model": self.model} if self.model is not None else {"params": self.params})}
        asked = Asked(base, self.model, float(positive("days", self.days)), _case(self.case) or "expected",
                      self.utilization, search,
                      None if self.budget_usd is None else float(positive("budget_usd", self.budget_usd)),
                      self.committed, max_plan_devices(), node)
        make_job(**base)  # the shared names, and each number every plan's Budget would refuse, checked once
        _check_numbers(self)
        object.__setattr__(self, "checked", asked)


def _check_numbers(q: PlanQuestion) -> None:
    """The tokens, parameters, goodput and adapters of `q`, each refused here by its name (not once per
    device and offering in the plans' notes; the method is the layout search's, checked with it)."""
    positive("tokens", q.tokens)
    if q.model is None:
        if q.params is None:
            raise TrainingBudgetError("a plan needs params (a count such as 7e9) or a model", "params")
        positive("params", q.params)
    if q.goodput is not None:
        fraction("goodput", q.goodput)
    if q.trainable is not None:
        check_trainable(q.trainable, q.params if q.model is None else float(q.model.params().total))
