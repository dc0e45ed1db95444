"""What an instructor runs: the exercises' check cells, the student release and class grading."""
