"""The two simulators, proven equal: the plain reference (every iteration) and the fast engine
(decode stretches in closed form), the fleet events both share, one run (``simulate``) and a
run as a server's event log, and the memo of runs a process has made.

Modules: ``events``, ``reference``, ``engine``, ``simulate``, ``memo``, ``event_log``.
"""
