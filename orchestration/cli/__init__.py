"""The ``streamhouse`` command line: one group per concern (broker, demo, edge, ...)."""
