"""prior: what published runs reached. The runs (data/runs.csv; runs), the robust ridge fit
(ridge, regression), the utilization prior for a device or a job (utilization, job_prior) and the
leave-one-out back-test (backtest). Imports base, hardware, physics and money."""
