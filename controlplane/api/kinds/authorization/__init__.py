"""The `authorization.k8s.io/v1` reviews: answered on create, never stored."""
