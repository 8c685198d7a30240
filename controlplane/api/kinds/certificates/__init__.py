"""certificates.k8s.io: CertificateSigningRequest (certificates.k8s.io/v1)."""
