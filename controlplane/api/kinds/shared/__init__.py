"""What several kinds share: metadata rules and schema, the pod spec, merge
facts, workload templates, volume claims. Kind modules import these; they
never import a kind module or the registry."""
