"""Built-in solver plugins of polyphys. Each registers through its own entry point."""
