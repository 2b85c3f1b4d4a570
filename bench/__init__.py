"""Performance budget of the site: ``python -m bench.run`` (see bench/run.py)."""
