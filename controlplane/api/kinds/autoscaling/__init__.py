"""The `autoscaling` group: HorizontalPodAutoscaler (v2, also served as v1)."""
