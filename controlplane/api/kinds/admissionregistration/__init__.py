"""The `admissionregistration.k8s.io/v1` group: ValidatingWebhookConfiguration
and MutatingWebhookConfiguration, stored and validated so that installers
that ship them (ingress-nginx, cert-manager) apply. skiff's API server does
not call admission webhooks: the configurations are records, not enforced."""
