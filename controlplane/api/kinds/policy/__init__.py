"""policy: PodDisruptionBudget (policy/v1)."""
