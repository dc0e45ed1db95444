"""The course's plots: the fleet month and its pools, a request's timeline, the roofline, and
figures as PNG bytes for a widget."""
