"""What the lessons show: the walkthrough app, plots, interview drills and the Voila page."""
