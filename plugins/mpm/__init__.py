"""polyphys.plugins.mpm (in development: registers nothing yet)."""
