# Thin wrappers around dev.py (which needs nothing but Python 3.11 and pip).
.PHONY: course test app bench lint exercises

course:
	python3 dev.py course

test:
	python3 dev.py test

app:
	python3 dev.py app

bench:
	python3 dev.py bench

lint:
	python3 dev.py lint

exercises:
	python3 dev.py exercises
