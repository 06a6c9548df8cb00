"""The runner: the one process that imports, builds, calls and times the candidate."""
