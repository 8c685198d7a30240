"""Kubernetes API types for skiff: the kinds table, defaults, validation, selectors.

Pure data and functions; never imports the server, storage or transport."""
