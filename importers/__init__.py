"""Built-in importer plugins of polyphys. Each registers through its own entry point."""
