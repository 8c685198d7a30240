"""The `scheduling.k8s.io/v1` group: PriorityClass."""
