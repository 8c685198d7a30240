"""The `metrics.k8s.io/v1beta1` group: NodeMetrics and PodMetrics (the metrics API)."""
