"""Built-in coupler plugins of polyphys. Each registers through its own entry point."""
