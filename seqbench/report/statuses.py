"""What a regression check says of each baseline point (pandas-free, so the api names it
cheaply): report/check.py judges, the CLI and the dashboard count."""

CHECK_STATUSES = ("pass", "regressed", "improved", "missing")
