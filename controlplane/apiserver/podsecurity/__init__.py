"""PodSecurity admission: Kubernetes' Pod Security Standards, enforced per namespace.

The parts, each with one job:

- levels.py: levels (privileged, baseline, restricted), policy versions
  (`latest`, `v1.N`) and a namespace's policy from its
  `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels;
- checks.py and checks_restricted.py: the checks of the Pod Security Standards,
  one function per check with Kubernetes' reasons and details, and the
  evaluator that runs those of a level and version in Kubernetes' order;
- config.py: the plugin's PodSecurityConfiguration (defaults and exemptions)
  from the control plane's admission configuration file;
- plugin.py: the admission decision for a Pod, a workload's pod template or a
  Namespace, as kube-apiserver's PodSecurity plugin makes it (enforce refuses
  with 403, audit adds audit annotations, warn adds `Warning` headers).

Nothing here stores anything or reads a socket: the registry calls
`plugin.PodSecurity.validate` with the request's attributes (registry_hooks).
"""
