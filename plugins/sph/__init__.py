"""polyphys.plugins.sph (in development: registers nothing yet)."""
