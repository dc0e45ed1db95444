"""The fixed numbers of the fleet month (spec: fleet-month.md, "Units and constants")."""

__all__ = [
    "SECONDS_PER_MONTH",
    "CHURN_FEE_SHARE",
    "UNMET_CAP",
    "CONVERGENCE_FLOOR",
    "WRONG_EVICTION_CAP",
    "JUMPY_PEAK",
    "HOUR_WINDOW_ERROR",
    "MAX_CARDS",
]

#: 730 hours: 365 x 24 / 12, in seconds.
SECONDS_PER_MONTH = 2_628_000
#: An evicted card bills 15% of its monthly rent once, on the way out.
CHURN_FEE_SHARE = 0.15
#: Capacity check: unmet demand (1 - delivered / average demand) at most 5%.
UNMET_CAP = 0.05
#: Convergence check: ideal bill / real bill at least 80%.
CONVERGENCE_FLOOR = 0.80
#: Eviction check: wrong evictions at most 20% of evictions (no evictions: 0% wrong).
WRONG_EVICTION_CAP = 0.20
#: A jumpy month bursts to about 1.8 x its average; the ideal operator sizes to that peak.
JUMPY_PEAK = 1.8
#: Through a one-hour window a card can look up to 25% better or worse than it is.
HOUR_WINDOW_ERROR = 0.25
#: The largest pool a plan may hold (keeps one month well under a millisecond to a few ms).
MAX_CARDS = 4096
