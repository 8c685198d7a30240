"""skiffctl entry point: parses the verb and dispatches to its module.

Verbs arrive with the control-plane issue; until then each says so and exits
non-zero, and unknown verbs or flags print usage and exit 2 as argparse does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

VERBS = (
    "apply",
    "get",
    "describe",
    "delete",
    "patch",
    "scale",
    "rollout",
    "autoscale",
    "logs",
    "exec",
    "top",
    "cordon",
    "uncordon",
    "drain",
    "events",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skiffctl", description="Control a skiff cluster.")
    parser.add_argument(
        "--config", help="credential file (default: $SKIFF_CONFIG, ~/.skiff/config)"
    )
    parser.add_argument("--server", help="override the API server address")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in VERBS:
        sub.add_parser(verb, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    print(f"skiffctl {args.verb}: not implemented yet", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
