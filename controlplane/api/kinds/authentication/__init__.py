"""The `authentication.k8s.io/v1` reviews and TokenRequest: answered on create, never stored."""
