"""The runtime's side of pod networking: the CNI client (`cni_client.py`)
that runs any CNI plugin chain for a sandbox, as libcni does."""
