"""skiff's node agent (the kubelet's job). It reaches the runtime only over
CRI and the control plane only through `controlplane.client`."""
