"""Grading a class: the sandbox a notebook runs in, its answer-free copy, nbval and the check
evaluation inside it, one notebook's grade, a folder's table, and the Ray engine."""
