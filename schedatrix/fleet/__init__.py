"""The fleet month: one rented pool's lottery, window, evictions, run set, bill, checks; engines."""
