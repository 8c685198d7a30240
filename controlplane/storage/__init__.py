"""Storage backends of the API server behind one contract (SQLite, etcd)."""
