"""What the lessons show: the walkthrough app, plots, interview drills and the Voila page.

Its rooms, lowest first (each imports only the rooms before it): ``figures`` (the plots),
``drills`` (one question type, the banks, drill sets, ``schedatrix drills``) and ``apps`` (the
lessons' widgets and the standalone page). ``live`` and ``progress`` sit below them all.
"""
