"""Running a grid's points: in local processes or on Ray (started or joined one way for every
command that uses it), and the sweep's table, summary and Pareto plot."""
