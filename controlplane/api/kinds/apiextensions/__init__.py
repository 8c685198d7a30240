"""The `apiextensions.k8s.io/v1` group: CustomResourceDefinition."""
