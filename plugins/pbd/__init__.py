"""polyphys.plugins.pbd (in development: registers nothing yet)."""
