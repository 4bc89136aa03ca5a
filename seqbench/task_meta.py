"""Task facts needed without importing torch (reports run on machines and paths without it).
tests/tasks/test_tasks.py checks them against the task classes."""

HIGHER_IS_BETTER = frozenset({"digits", "pdigits", "fashion", "pfashion"})
