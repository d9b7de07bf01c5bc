"""Example edge apps, runnable with ``streamhouse edge run examples.<module>:<attr>``."""
