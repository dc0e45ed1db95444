"""A class release: exercises made from the solutions, the folder copied for students, and the
optional extras a release can name."""
