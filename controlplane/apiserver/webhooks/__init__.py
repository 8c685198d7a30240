"""Calling out from the API server: the HTTPS webhook client (client.py, with
the Service resolution of resolve.py) that admission webhooks and CRD
conversion webhooks share, and the admission webhook dispatcher (matching,
AdmissionReview, the mutating and validating chains)."""
