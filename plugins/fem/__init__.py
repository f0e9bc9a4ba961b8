"""polyphys.plugins.fem (in development: registers nothing yet)."""
