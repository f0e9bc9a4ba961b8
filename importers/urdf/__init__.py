"""polyphys.importers.urdf (in development: registers nothing yet)."""
