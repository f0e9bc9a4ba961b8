"""polyphys.importers.mjcf (in development: registers nothing yet)."""
