"""Processes an evaluation runs in: the sandbox, the fork server, the worker that holds judge and runner."""
