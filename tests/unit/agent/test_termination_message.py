"""Termination messages as the kubelet reads them: the file's last 4 KiB,
FallbackToLogsOnError's last 80 log lines (2 KiB at most) only for a failed
container with an empty file, the runtime's reason text first, and the
pod's 12 KiB shared evenly by its containers (the kubelet's normalizeStatus)."""

from pathlib import Path

from agent.termination_message import (
    MAX_LOG_BYTES,
    MAX_MESSAGE,
    PATH_ANNOTATION,
    POLICY_ANNOTATION,
    cap_pod_messages,
    message_mount,
    read_message,
)
from proto.runtime.v1 import api_pb2 as cri


def exited(
    tmp_path: Path, policy: str, code: int, file: bytes | None, log: list[str]
) -> cri.ContainerStatus:
    mount = message_mount(tmp_path / "pod", {"name": "c"})
    assert mount is not None and mount.container_path == "/dev/termination-log"
    assert Path(mount.host_path).stat().st_mode & 0o777 == 0o666
    if file is None:
        Path(mount.host_path).unlink()
    else:
        Path(mount.host_path).write_bytes(file)
    log_path = tmp_path / "0.log"
    log_path.write_text(
        "".join(f"2026-01-01T00:00:00.000000000Z stdout F {line}\n" for line in log)
    )
    return cri.ContainerStatus(
        state=cri.CONTAINER_EXITED,
        exit_code=code,
        mounts=[mount],
        log_path=str(log_path),
        annotations={PATH_ANNOTATION: "/dev/termination-log", POLICY_ANNOTATION: policy},
    )


def test_the_file_wins_and_only_its_last_4_kib(tmp_path: Path) -> None:
    st = exited(tmp_path, "FallbackToLogsOnError", 1, b"x" * 5000 + b"the end", ["log line"])
    msg = read_message(st)
    assert len(msg) == MAX_MESSAGE and msg.endswith("the end")


def test_fallback_to_logs_only_on_error_with_an_empty_file(tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(200)]
    st = exited(tmp_path, "FallbackToLogsOnError", 2, b"", lines)
    msg = read_message(st)
    assert msg.endswith("line 199\n") and len(msg.encode()) <= MAX_LOG_BYTES
    assert "line 119\n" not in msg  # only the last 80 lines
    assert read_message(exited(tmp_path, "FallbackToLogsOnError", 0, b"", lines)) == ""
    assert read_message(exited(tmp_path, "File", 2, b"", lines)) == ""
    assert read_message(exited(tmp_path, "FallbackToLogsOnError", 2, None, ["gone"])) == "gone\n"


def test_the_runtime_reason_text_comes_first(tmp_path: Path) -> None:
    st = exited(tmp_path, "File", 137, b"bye", [])
    st.message = "OOMKilled"
    assert read_message(st) == "OOMKilled: bye"


def test_each_message_is_cut_to_its_share_of_12_kib_keeping_its_start() -> None:
    """As the kubelet's status manager: 12 KiB / (init + app containers)
    per terminated state, state and lastState alike, the start kept, even
    when the messages together are under 12 KiB."""

    def term(msg: str, last: str = "") -> dict[str, object]:
        return {"state": {"terminated": {"message": msg}},
                "lastState": {"terminated": {"message": last}} if last else {}}  # fmt: skip

    statuses = [term("a" * 4000 + "tail", "z" * 3100), term("b" * 100), term("c" * 3072)]
    cap_pod_messages(statuses, 4)  # 3072 bytes each
    msgs = [s["state"]["terminated"]["message"] for s in statuses]  # type: ignore[index]
    assert msgs == ["a" * 3072, "b" * 100, "c" * 3072]
    assert statuses[0]["lastState"]["terminated"]["message"] == "z" * 3072  # type: ignore[index]
    # 6 containers: 2048 bytes each although the two messages add up to 6 KiB
    two = [term("x" * 3072), term("y" * 3072)]
    cap_pod_messages(two, 6)
    assert [len(s["state"]["terminated"]["message"]) for s in two] == [2048, 2048]  # type: ignore[index]
    # a multi-byte character the cut splits is dropped, not mangled
    wide = [term("é" * 2000)]
    cap_pod_messages(wide, 3)  # 4096 bytes: 2048 characters fit, 2000 do
    assert wide[0]["state"]["terminated"]["message"] == "é" * 2000  # type: ignore[index]
    odd = [term("x" + "é" * 3000)]
    cap_pod_messages(odd, 3)  # 4096 bytes: x + 2047 é + half of one
    assert odd[0]["state"]["terminated"]["message"] == "x" + "é" * 2047  # type: ignore[index]
