"""The `apps/v1` workloads: Deployment, ReplicaSet, StatefulSet, DaemonSet."""
