"""The parallel run's order: the longest units first (tests/harness/xdist_scopes.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.harness.module_times import main as module_times_main
from tests.harness.module_times import module_path, module_times
from tests.harness.xdist_scopes import (
    TIMES_FILE,
    guess,
    load_times,
    longest_first,
    module_of,
    param_scope,
)

ROOT = Path(__file__).resolve().parents[3]


def _queue(**tests: int) -> dict[str, dict[str, bool]]:
    return {scope: {f"{scope}::t{i}": False for i in range(n)} for scope, n in tests.items()}


def test_measured_modules_go_longest_first() -> None:
    queue = _queue(**{"tests/unit/a.py": 90, "tests/e2e/b.py": 1, "tests/integration/c.py": 3})
    times = {"tests/e2e/b.py": 86.0, "tests/integration/c.py": 20.0, "tests/unit/a.py": 4.0}
    assert longest_first(queue, times) == [
        "tests/e2e/b.py",
        "tests/integration/c.py",
        "tests/unit/a.py",
    ]


def test_an_unmeasured_module_is_guessed_from_its_layer_and_tests() -> None:
    # 200 unit tests (10 s) before 1 e2e test (10 s)? Equal: xdist's order kept.
    assert guess("tests/unit/x.py", 200) == guess("tests/e2e/y.py", 1) == 10.0
    queue = _queue(**{"tests/unit/x.py": 100, "tests/e2e/y.py": 2, "tests/linux/z.py": 3})
    assert longest_first(queue, {}) == ["tests/e2e/y.py", "tests/unit/x.py", "tests/linux/z.py"]
    assert guess("bench/test_q.py", 2) == 2.0


def test_a_spread_modules_time_is_shared_by_its_tests() -> None:
    queue = {
        "tests/e2e/p.py::a": {"tests/e2e/p.py::a": False},
        "tests/e2e/p.py::b": {"tests/e2e/p.py::b": False},
        **_queue(**{"tests/integration/q.py": 4}),
    }
    times = {"tests/e2e/p.py": 60.0, "tests/integration/q.py": 40.0}
    assert longest_first(queue, times) == [
        "tests/integration/q.py",
        "tests/e2e/p.py::a",
        "tests/e2e/p.py::b",
    ]


def test_a_by_param_module_is_one_unit_per_parameter() -> None:
    assert param_scope("tests/i/m.py::test_a[1.27]") == "tests/i/m.py[1.27]"
    assert param_scope("tests/i/m.py::test_b[1.27]") == "tests/i/m.py[1.27]"
    assert param_scope("tests/i/m.py::test_c") == "tests/i/m.py"
    assert module_of("tests/i/m.py[1.27]") == "tests/i/m.py"
    queue = {
        "tests/i/m.py[1.27]": {"tests/i/m.py::test_a[1.27]": False},
        "tests/i/m.py[1.28]": {"tests/i/m.py::test_a[1.28]": False},
        **_queue(**{"tests/integration/q.py": 4}),
    }
    times = {"tests/i/m.py": 100.0, "tests/integration/q.py": 40.0}
    assert longest_first(queue, times) == [
        "tests/i/m.py[1.27]",
        "tests/i/m.py[1.28]",
        "tests/integration/q.py",
    ]


def test_the_checked_in_times_name_modules_of_this_tree() -> None:
    times = load_times()
    assert times, f"{TIMES_FILE} is missing or empty"
    missing = [m for m in times if not (ROOT / m).is_file()]
    # A renamed module is only guessed again; many gone means the file is stale.
    assert len(missing) <= len(times) // 10, missing
    assert load_times(TIMES_FILE.with_name("absent.json")) == {}


def test_module_times_from_a_junit_report(tmp_path: Path) -> None:
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_b.py").write_text("")
    (tmp_path / "tests" / "test_c.py").write_text("")
    report = tmp_path / "run.xml"
    report.write_text(
        textwrap.dedent("""\
        <testsuites><testsuite name="pytest">
        <testcase classname="tests.e2e.test_b" name="test_one" time="30.25"/>
        <testcase classname="tests.e2e.test_b.TestGroup" name="test_two" time="2.5"/>
        <testcase classname="tests.test_c" name="test_quick" time="0.2"/>
        <testcase classname="tests.gone" name="test_x" time="9"/>
        </testsuite></testsuites>
        """)
    )
    assert module_path("tests.e2e.test_b.TestGroup", tmp_path) == "tests/e2e/test_b.py"
    assert module_path("tests.gone", tmp_path) is None
    # Under a second: left to the guess.
    assert module_times([report], tmp_path) == {"tests/e2e/test_b.py": 32.8}


def test_module_times_command_refuses_a_report_of_another_tree(tmp_path: Path) -> None:
    report = tmp_path / "run.xml"
    report.write_text('<testsuite><testcase classname="elsewhere.test_a" time="5"/></testsuite>')
    out = tmp_path / "times.json"
    assert module_times_main([str(report), "--out", str(out)]) == 1
    assert not out.exists()


def test_a_parallel_run_starts_the_longest_module(tmp_path: Path) -> None:
    """Through pytest-xdist itself: one worker runs the units in the order
    the controller hands them out."""
    log = tmp_path / "order.log"
    for name, tests in (("test_many", 5), ("test_slow", 1), ("test_mid", 2)):
        body = "".join(
            f"def test_{i}():\n    open({str(log)!r}, 'a').write('{name}\\n')\n"
            for i in range(tests)
        )
        (tmp_path / f"{name}.py").write_text(body)
    times = tmp_path / "times.json"
    times.write_text(json.dumps({"test_slow.py": 80.0, "test_mid.py": 9.0}))
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""\
        import pytest
        from tests.harness.xdist_scopes import ModuleScheduling
        from pathlib import Path

        class Timed(ModuleScheduling):
            times_file = Path({str(times)!r})

        @pytest.hookimpl(optionalhook=True)
        def pytest_xdist_make_scheduler(config, log):
            return Timed(config, log)
        """)
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1",
         "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
        cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    order = log.read_text().split()
    assert order == ["test_slow"] + ["test_mid"] * 2 + ["test_many"] * 5
