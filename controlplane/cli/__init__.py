"""skiffctl: a kubectl-like CLI for the skiff control plane."""
