"""Multi-node end-to-end scenarios (tests/harness/cluster.py clusters)."""
