"""Protocol sources (.proto) and their generated Python stubs, nothing else
(the hand-written streaming protocols live in machinery/streaming).

`python -m proto.generate` regenerates every stub; `--check` fails when the
checked-in stubs differ from a fresh generation. Note that PyPI's proto-plus
also installs a top-level `proto` package; a test makes sure ours is loaded."""
