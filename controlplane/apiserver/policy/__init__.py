"""ValidatingAdmissionPolicy enforcement (Kubernetes'
admission/plugin/policy/validating): the policies and bindings kept by the
watch (cache.py), which requests a binding matches (matching.py), the
admission plugin that evaluates their CEL (admission.py), and the
controller that writes status.typeChecking (typecheck.py)."""
