"""Step time from the layout: the physics of one training step, term by term.

This room holds the step model: a `Layout` part (tensor, pipeline, virtual-stage, context and
expert parallel degrees, ZeRO stage, micro-batch, sequence length, global batch, recompute), the
device's `Hardware` (its dense rates and interconnect: scale-up bandwidth and domain, scale-out
NIC), each term of the step as a named function with its source (`terms`), their composition
into a frozen `Step` (`step_time`), the few constants fitted on the packaged measured layouts
(`calibrate`), a team's own measured steps as one factor per device (`team`), the packaged
measured layouts (`data`) and whole runs' hours with goodput (`runs`). It imports base, model and
hardware (the rooms below it), numpy and the standard library.
"""

from __future__ import annotations

from ..physics.fit import DEFAULT_SEQ_LEN
from .calibrate import CONSTANTS, Constants, fit_constants, leave_one_out
from .data import MeasuredSet, load_measured
from .hardware import Hardware, hardware
from .layout import (
    CODES as RECOMPUTE_CODES,
    NAMES as RECOMPUTE,  # every recompute name a step layout takes
    Layout,
)
from .runs import (
    DEADLINE_BOUNDS,
    DEADLINE_COUNTS,
    STEP_RESIDUAL,
    Goodput,
    RunHours,
    case_factor,
    deadline_bound,
    deadline_devices,
    fit_goodput,
    run_hours,
)
from .shape import Shape
from .step import Step, step_time
from .team import TEAM_RESIDUAL, TeamCalibration, TeamSteps, calibrate_from_measured, load_team_steps

__all__ = ["CONSTANTS", "DEADLINE_BOUNDS", "DEADLINE_COUNTS", "DEFAULT_SEQ_LEN", "RECOMPUTE", "RECOMPUTE_CODES",
           "STEP_RESIDUAL",
           "Constants", "Goodput", "Hardware", "Layout", "MeasuredSet", "RunHours", "Shape", "Step", "TEAM_RESIDUAL",
           "TeamCalibration", "TeamSteps", "calibrate_from_measured", "case_factor", "deadline_bound",
           "deadline_devices", "fit_constants", "fit_goodput", "hardware", "leave_one_out", "load_measured",
           "load_team_steps", "run_hours", "step_time"]
