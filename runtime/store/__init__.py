"""The runtime's state: sandbox and container records with explicit state
machines, kept in memory behind a lock and checkpointed atomically to disk."""
