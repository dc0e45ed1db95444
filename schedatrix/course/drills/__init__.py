"""The drills: one question type for every bank (fleet, system, serving, expert), the banks that
pose them, the drills and drill sets they make, and ``schedatrix drills``."""
