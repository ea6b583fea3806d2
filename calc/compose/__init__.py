"""compose: one job, one answer. The frozen Job and Budget (job), the one composer `budget`
(budget), the terms it takes from tables (terms), ranges from the prior (ranges) and the report rows
every door prints (report). Imports every room below it: base to prior."""
