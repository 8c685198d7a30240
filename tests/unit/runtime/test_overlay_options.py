import pytest

from runtime.linux.mounts import MAX_MOUNT_OPTIONS, overlay_options


def test_few_layers_use_absolute_paths_topmost_first() -> None:
    opts, cwd, links = overlay_options(
        ["/r/layers/a/fs", "/r/layers/b/fs"], "/r/c/upper", "/r/c/work"
    )
    assert opts == "lowerdir=/r/layers/b/fs:/r/layers/a/fs,upperdir=/r/c/upper,workdir=/r/c/work"
    assert cwd is None and links == {}


def test_many_layers_use_short_links() -> None:
    base = "/var/lib/skiff/runtime/images/layers"
    lower = [f"{base}/{i:064x}/fs" for i in range(200)]
    opts, cwd, links = overlay_options(lower, "/s/c1/upper", "/s/c1/work")
    assert cwd == "/s/c1/l"
    assert len(opts) <= MAX_MOUNT_OPTIONS
    assert opts.startswith("lowerdir=199:198:") and ":0,upperdir=/s/c1/upper," in opts
    assert links["0"] == lower[0] and links["199"] == lower[199]


def test_too_many_layers_is_a_clear_error() -> None:
    with pytest.raises(OSError, match="exceed a page"):
        overlay_options([f"/l/{i:0100x}" for i in range(1000)], "/u" * 500, "/w")
