"""The `apiregistration.k8s.io/v1` group: APIService (API aggregation)."""
