"""The component processes' supervisor and the child's side of its lifeline:
output relayed with the child's name, a child that exits started again,
stop() ending even a child that ignores SIGTERM, a child's stop on the
lifeline's end of file; and the controller manager's flags handed on
unchanged to its process."""

from __future__ import annotations

import argparse
import io
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import componentprocs
from controlplane import main as cp_main
from controlplane.client import component
from controlplane.controllers import config
from controlplane.supervisor import ProcessSpec, Supervisor
from tests.harness.wait import wait_for


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class Output(io.BytesIO):
    """What the supervisor relays, read safely while it writes."""

    lock = threading.Lock()

    def write(self, data: bytes) -> int:  # type: ignore[override]
        with self.lock:
            return super().write(data)

    def text(self) -> str:
        with self.lock:
            return self.getvalue().decode()


@pytest.fixture
def output() -> Output:
    return Output()


@pytest.fixture
def supervise(output: Output) -> Iterator[list[Supervisor]]:
    made: list[Supervisor] = []
    yield made
    for s in made:
        s.stop()


def test_output_is_relayed_with_the_name_and_a_stop_ends_the_child(
    output: Output, supervise: list[Supervisor]
) -> None:
    sup = Supervisor(
        [ProcessSpec("echo", py("import time; print('hello', flush=True); time.sleep(60)"))],
        output=output,
    )
    supervise.append(sup)
    sup.start()
    wait_for(lambda: "echo: hello\n" in output.text(), timeout=10)
    pid = sup.pids()["echo"]
    sup.stop()
    assert sup.pids() == {}
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie


def test_an_exited_child_is_started_again_with_a_backoff(
    output: Output, supervise: list[Supervisor]
) -> None:
    sup = Supervisor([ProcessSpec("crash", py("raise SystemExit(3)"))], backoff=0.05,
                     max_backoff=0.2, output=output)  # fmt: skip
    supervise.append(sup)
    sup.start()
    wait_for(lambda: sup.starts("crash") >= 3, timeout=10, message="restarts")


def test_a_child_ignoring_sigterm_is_killed_after_the_grace(
    output: Output, supervise: list[Supervisor]
) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    code += "print('ready', flush=True); time.sleep(60)"
    sup = Supervisor([ProcessSpec("stubborn", py(code))], grace=0.5, output=output)
    supervise.append(sup)
    sup.start()
    wait_for(lambda: "stubborn: ready" in output.text(), timeout=10)
    pid = sup.pids()["stubborn"]
    sup.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_child_inherits_the_lifelines_read_end(
    output: Output, supervise: list[Supervisor]
) -> None:
    code = "import os, stat, time; fd = int(os.environ['" + component.LIFELINE_ENV + "']); "
    code += "print('fifo', stat.S_ISFIFO(os.fstat(fd).st_mode), flush=True); time.sleep(60)"
    sup = Supervisor([ProcessSpec("life", py(code))], output=output)
    supervise.append(sup)
    sup.start()
    wait_for(lambda: "life: fifo True" in output.text(), timeout=10)


def test_a_child_stops_when_the_lifeline_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()
    monkeypatch.setenv(component.LIFELINE_ENV, str(r))
    monkeypatch.setattr(component, "LIFELINE_GRACE", 0.1)
    stop, exited = threading.Event(), threading.Event()
    try:
        component.watch_lifeline("test", stop, exit=lambda code: exited.set())
        assert not stop.wait(0.2)
        os.close(w)
        assert stop.wait(10)
        assert exited.wait(10)  # and the hard exit follows a grace
    finally:
        os.close(r)


def test_a_lifeline_that_is_no_fd_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(component.LIFELINE_ENV, "nope")
    with pytest.raises(SystemExit) as exc:
        component.watch_lifeline("test", threading.Event())
    assert exc.value.code == 2


def test_the_controller_managers_flags_reach_its_process() -> None:
    argv = ["--controllers", "*,-podgc", "--no-allocate-node-cidrs", "--cluster-cidr",
            "10.9.0.0/16", "--node-monitor-grace-period", "7.5", "--concurrent-syncs", "3"]  # fmt: skip
    args = cp_main.build_parser().parse_args(argv)
    own = argparse.ArgumentParser()
    config.add_flags(own)
    again = own.parse_args(componentprocs.manager_argv(args))
    for dest, value in vars(again).items():
        assert getattr(args, dest) == value, dest
    assert config.config_from_args(again) == config.config_from_args(args)


def test_disabled_built_in_controllers_stay_off_in_the_managers_process() -> None:
    """`skiff controlplane --disable ingress --disable servicelb` (k3s'
    --disable traefik|servicelb) with the controller manager a process of
    its own: neither runs there (no IngressClass made, no addresses given)."""
    args = cp_main.build_parser().parse_args(
        ["--disable", "ingress", "--disable", "servicelb", "--controllers", "*,-podgc"]
    )
    own = argparse.ArgumentParser()
    config.add_flags(own)
    controllers = config.config_from_args(
        own.parse_args(componentprocs.manager_argv(args))
    ).controllers
    for name, on in (("ingress", False), ("servicelb", False), ("podgc", False), ("job", True)):
        assert config.is_enabled(name, controllers) is on, name


def test_signals_go_to_started_children_only(output: Output) -> None:
    sup = Supervisor([ProcessSpec("quick", py("pass"))], backoff=30, output=output)
    sup.start()
    wait_for(lambda: sup.pids() == {}, timeout=10, message="the child exited")
    sup.stop()  # nothing left to signal (its pid may be anyone's by now): no kill, no error
    assert sup.starts("quick") == 1  # the backoff still running when stopped


def test_processes_by_default_only_with_two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cp_main.build_parser().parse_args([]).component_processes is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not componentprocs.use_processes(None)
    assert componentprocs.use_processes(True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert componentprocs.use_processes(None)
    assert not componentprocs.use_processes(False)


def test_a_component_processs_bad_configuration_is_refused_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "volcano-scheduler.conf"
    bad.write_text("actions: enqueue, nosuchaction\n")
    monkeypatch.setenv("SKIFF_VOLCANO_CONFIG", str(bad))
    args = cp_main.build_parser().parse_args([])
    with pytest.raises(ValueError, match=r"volcano-scheduler: refusing to start: .*nosuchaction"):
        componentprocs.check_components(["scheduler", "volcano-scheduler"], args)
    with pytest.raises(ValueError, match="controllers: refusing to start"):
        componentprocs.check_components(
            ["controllers"], cp_main.build_parser().parse_args(["--controllers", "nosuch"])
        )
