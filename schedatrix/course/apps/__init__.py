"""The lessons' apps: the walkthrough, the serving, fault, design, review and drill apps, the
standalone page that serves them, and the serving lessons' shared designs and loads."""
