"""The embedded schedulers are configured by flags (issue 27 item 4):
`skiff controlplane --scheduler-config/--volcano-scheduler-config` (and
`skiff up`'s, passed through) reach the scheduler in this process and the
component processes' `--config`, as kube-scheduler's `--config`; the older
$SKIFF_SCHEDULER_CONFIG/$SKIFF_VOLCANO_CONFIG stay a fallback the flag
overrides."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agent import up
from agent.layout import Layout
from controlplane import componentprocs
from controlplane import main as cp_main
from controlplane.scheduler import run as scheduler
from controlplane.scheduler.batch import run as batch

BAD_VOLCANO = "actions: enqueue, nosuchaction\n"
GOOD_VOLCANO = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
BAD_PROFILE = (
    "profiles:\n- schedulerName: x\n  plugins:\n    filter:\n"
    "      enabled:\n      - name: NoSuchPlugin\n"
)


def test_the_flags_reach_the_in_process_components(tmp_path: Path) -> None:
    bad_conf = tmp_path / "volcano-scheduler.conf"
    bad_conf.write_text(BAD_VOLCANO)
    args = cp_main.build_parser().parse_args(["--volcano-scheduler-config", str(bad_conf)])
    hooks = dict(cp_main.components(args))
    with pytest.raises(ValueError, match="nosuchaction"):
        hooks["volcano-scheduler"](None, threading.Event())
    bad_profile = tmp_path / "profiles.yaml"
    bad_profile.write_text(BAD_PROFILE)
    args = cp_main.build_parser().parse_args(["--scheduler-config", str(bad_profile)])
    with pytest.raises(ValueError, match="NoSuchPlugin"):
        dict(cp_main.components(args))["scheduler"](None, threading.Event())


def test_the_component_names_are_the_in_process_components() -> None:
    """`skiff controlplane` picks the enabled components by these names
    without building them; in process they start in this order."""
    args = cp_main.build_parser().parse_args([])
    assert [name for name, _ in cp_main.components(args)] == list(componentprocs.PROCESS_MODULES)


def test_the_flags_reach_the_component_processes(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(BAD_VOLCANO)
    args = cp_main.build_parser().parse_args(
        ["--volcano-scheduler-config", str(conf), "--scheduler-config", "profiles.yaml"]
    )
    with pytest.raises(ValueError, match=r"volcano-scheduler: refusing to start: .*nosuchaction"):
        componentprocs.check_components(["volcano-scheduler"], args)
    specs = {
        s.name: list(s.argv)
        for s in componentprocs.component_processes(
            ["scheduler", "volcano-scheduler", "controllers"], args, tmp_path, "/x.sock"
        )
    }
    assert specs["volcano-scheduler"][-2:] == ["--config", str(conf)]
    assert specs["scheduler"][-2:] == ["--config", str(Path("profiles.yaml").absolute())]
    assert "--config" not in specs["controllers"]
    plain = cp_main.build_parser().parse_args([])
    for spec in componentprocs.component_processes(["scheduler"], plain, tmp_path, "/x.sock"):
        assert "--config" not in spec.argv  # the process reads its $SKIFF_*_CONFIG then


def test_the_environment_is_a_fallback_the_flag_overrides(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad, good = tmp_path / "bad.conf", tmp_path / "good.conf"
    bad.write_text(BAD_VOLCANO)
    good.write_text(GOOD_VOLCANO)
    monkeypatch.setenv(batch.CONFIG_ENV, str(bad))
    with pytest.raises(ValueError, match="nosuchaction"):
        batch.load_conf()
    assert list(batch.load_conf(str(good)).actions) == ["enqueue", "allocate"]
    profile = tmp_path / "profiles.yaml"
    profile.write_text("profiles:\n- schedulerName: from-the-flag\n")
    monkeypatch.setenv(scheduler.CONFIG_ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(OSError):
        scheduler.load_config()
    cfg = scheduler.load_config(str(profile))
    assert [p.scheduler_name for p in cfg.profiles] == ["from-the-flag"]


def test_skiff_up_passes_them_on(tmp_path: Path) -> None:
    args = up.build_parser().parse_args(
        ["--scheduler-config", "p.yaml", "--volcano-scheduler-config", "v.conf"]
    )
    argv = up.controlplane_argv(args, Layout.under(tmp_path), "10.0.0.1:6443")
    parsed = cp_main.build_parser().parse_args(argv)
    assert parsed.scheduler_config == str(Path("p.yaml").absolute())
    assert parsed.volcano_scheduler_config == str(Path("v.conf").absolute())
    plain = cp_main.build_parser().parse_args(
        up.controlplane_argv(up.build_parser().parse_args([]), Layout.under(tmp_path), "x")
    )
    assert plain.scheduler_config is None and plain.volcano_scheduler_config is None


def test_the_batch_scheduler_takes_vc_schedulers_flag_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "v.conf"
    bad.write_text(BAD_VOLCANO)
    assert batch.main(["--kubeconfig", "k", "--scheduler-conf", str(bad)]) == 2
    assert "nosuchaction" in capsys.readouterr().err
