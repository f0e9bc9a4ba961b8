"""Bundled scene files for ``polyphys run`` (package data)."""
