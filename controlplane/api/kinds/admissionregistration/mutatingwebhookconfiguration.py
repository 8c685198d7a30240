"""MutatingWebhookConfiguration (admissionregistration.k8s.io/v1, cluster-scoped):
mutating admission webhooks, stored and validated as Kubernetes does
(webhooks.py has the rules and columns); skiff's API server does not call
them (see the package's docstring)."""

from __future__ import annotations

from controlplane.api.kinds.admissionregistration import webhooks

DEFINITION = webhooks.definition(mutating=True)
