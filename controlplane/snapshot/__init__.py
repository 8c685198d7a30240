"""Snapshots of the control plane's state, and restoring one (k3s' etcd-snapshot).

fileformat.py   the snapshot file: a header (magic, JSON metadata with the
                payload's size and SHA-256) and the store's own backup
sqlite_backup.py  SQLite's online backup API: a consistent copy while the
                server writes; checking and installing a restored copy
etcd_backup.py  etcd's Maintenance.Snapshot, and restoring one under the prefix
catalog.py      the snapshot directory: names, ls, delete, prune
restore.py      `skiff controlplane --cluster-reset --restore-path FILE`
schedule.py     scheduled snapshots in the control plane, with retention
cli.py          `skiff snapshot save|ls|delete|prune`
"""
