"""The in-tree plugins, one module each; `controlplane.scheduler.registry` names them."""
