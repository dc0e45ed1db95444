"""What an instructor runs: the exercises' check cells, the student release and class grading.

Its rooms, lowest first (each imports only the rooms before it): ``checking`` (the exercises'
registry, the boundary, the checks, the checker), ``releases`` (exercises made and copied for a
class) and ``grader`` (the sandbox and a class's grades). ``grading`` is what a check cell
imports, on top.
"""
