"""The `storage.k8s.io/v1` group: StorageClass, CSIDriver, CSINode, VolumeAttachment, CSIStorageCapacity."""
