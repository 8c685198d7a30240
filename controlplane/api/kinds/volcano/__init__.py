"""Volcano's kinds (batch scheduling): PodGroup and Queue (`scheduling.volcano.sh/v1beta1`),
Job (`batch.volcano.sh/v1alpha1`, key `Job.batch.volcano.sh`) and Command (`bus.volcano.sh/v1alpha1`).
Their rules and constants are controlplane/api/volcano.py's."""
