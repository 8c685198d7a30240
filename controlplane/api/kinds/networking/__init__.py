"""The `networking.k8s.io/v1` group: NetworkPolicy (enforced by the agents),
Ingress and IngressClass (served by the built-in ingress controller)."""
