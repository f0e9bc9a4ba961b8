"""polyphys.plugins.rigid (in development: registers nothing yet)."""
