"""node.k8s.io: RuntimeClass (node.k8s.io/v1)."""
