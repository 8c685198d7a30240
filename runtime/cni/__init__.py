"""The skiff CNI plugin (`skiff-cni`) and its IPAM (`skiff-ipam`).

Every module on the ADD/DEL path imports only C-level modules (`posix`,
`_json`, `_socket`, `_ctypes`, `_sha256`, `fcntl`, `struct`) so that a plugin
invocation costs little more than a bare interpreter: no `os`, `json`/`re`,
`subprocess`, `ipaddress`, `dataclasses`, `typing` at run time, or
`pyroute2` (whose import alone takes ~200 ms); netlink is spoken over a raw
socket (`netlink.py`). `install.py` writes launchers that start the
interpreter with `-SE`. Keep this file empty of imports.
"""
