"""The channel between judge and runner: messages, shared buffers, the runner's confinement."""
