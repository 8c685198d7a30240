"""The `rbac.authorization.k8s.io/v1` group: Role, ClusterRole, RoleBinding, ClusterRoleBinding."""
