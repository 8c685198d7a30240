"""flowcontrol.apiserver.k8s.io: FlowSchema and PriorityLevelConfiguration (v1),
API priority and fairness's configuration (the mandatory and suggested
objects: controlplane/api/apf_bootstrap.py)."""
