"""The `coordination.k8s.io/v1` group: Lease."""
