"""The check cells' library: which check belongs to which exercise, the boundary a learner's
functions are called across, the checks of every exercise, and the checker process."""
