"""Code that exists only because of an upstream bug or gap. Each module's docstring names the
upstream issue and when the module can go; delete it then (and its call in the glue)."""
