"""Demo and benchmark data generators: not collectors, kept apart from the sources."""
