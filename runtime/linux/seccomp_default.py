"""The RuntimeDefault seccomp profile: an allow-list with containerd's (and
Docker's) default-profile semantics. Everything not listed fails with
EPERM; a few syscalls are allowed only with a capability the container
holds; `clone` may not make namespaces without CAP_SYS_ADMIN, and `clone3`
(whose flags a filter cannot inspect) fails with ENOSYS so that the C
library falls back to `clone`; `personality` only with the harmless values.

A declarative table (syscall names are facts of the kernel ABI, the grouping
is containerd's), turned into an OCI profile by `profile(caps)` and compiled
by runtime.linux.seccomp.build. Syscalls this architecture lacks are skipped
there.
"""

from __future__ import annotations

import errno
import platform
from typing import Any

_ALLOW_NAMES = (
    "accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir chmod chown "
    "chown32 clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime "
    "clock_gettime64 clock_nanosleep clock_nanosleep_time64 close close_range connect "
    "copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old "
    "epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit "
    "exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir "
    "fchmod fchmodat fchmodat2 fchown fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr "
    "flistxattr flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 "
    "fsync ftruncate ftruncate64 futex futex_requeue futex_time64 futex_wait futex_waitv "
    "futex_wake futimesat getcpu getcwd getdents getdents64 getegid getegid32 geteuid "
    "geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp "
    "getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32 "
    "getrlimit get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid "
    "gettimeofday getuid getuid32 getxattr getxattrat inotify_add_watch inotify_init "
    "inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents "
    "io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit ipc kill landlock_add_rule "
    "landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat "
    "listen listxattr listxattrat llistxattr _llseek lremovexattr lseek lsetxattr lstat "
    "lstat64 madvise map_shadow_stack membarrier memfd_create memfd_secret mincore mkdir "
    "mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect mq_getsetattr mq_notify "
    "mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 "
    "mq_unlink mremap mseal msgctl msgget msgrcv msgsnd msync munlock munlockall munmap "
    "nanosleep newfstatat _newselect open openat openat2 pause pidfd_open "
    "pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 "
    "prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 "
    "pwritev pwritev2 read readahead readlink readlinkat readv recv recvfrom recvmmsg "
    "recvmmsg_time64 recvmsg remap_file_pages removexattr removexattrat rename renameat "
    "renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask "
    "rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 "
    "rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam sched_get_priority_max "
    "sched_get_priority_min sched_getscheduler sched_rr_get_interval "
    "sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam "
    "sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop "
    "semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32 "
    "setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority "
    "setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 "
    "setrlimit set_robust_list setsid setsockopt set_thread_area set_tid_address setuid "
    "setuid32 setxattr setxattrat shmat shmctl shmdt shmget shutdown sigaltstack signalfd "
    "signalfd4 sigprocmask sigreturn socket socketcall socketpair splice stat stat64 statfs "
    "statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time "
    "timer_create timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime "
    "timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime "
    "timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat "
    "utime utimensat utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev"
)
ALLOW: list[str] = _ALLOW_NAMES.split()

BY_ARCH = {
    "x86_64": ["arch_prctl", "modify_ldt"],
    "i686": ["modify_ldt"],
    "aarch64": ["arm_fadvise64_64", "arm_sync_file_range", "breakpoint", "cacheflush", "set_tls"],
    "armv7l": ["arm_fadvise64_64", "arm_sync_file_range", "breakpoint", "cacheflush", "set_tls"],
    "s390x": ["s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr"],
}

# allowed only when the container holds the capability (names without CAP_)
BY_CAP = {
    "SYS_ADMIN": ["bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen",
                  "fspick", "lookup_dcookie", "mount", "mount_setattr", "move_mount",
                  "name_to_handle_at",
                  "open_tree", "perf_event_open", "quotactl", "quotactl_fd", "setdomainname",
                  "sethostname", "setns", "syslog", "umount", "umount2", "unshare"],
    "SYS_BOOT": ["reboot"],
    "SYS_CHROOT": ["chroot"],
    "SYS_MODULE": ["delete_module", "init_module", "finit_module"],
    "SYS_PACCT": ["acct"],
    "SYS_PTRACE": ["kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv",
                   "process_vm_writev", "ptrace"],
    "SYS_RAWIO": ["iopl", "ioperm"],
    "SYS_TIME": ["settimeofday", "stime", "clock_settime", "clock_settime64"],
    "SYS_TTY_CONFIG": ["vhangup"],
    "SYS_NICE": ["get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"],
    "SYSLOG": ["syslog"],
    "BPF": ["bpf"],
    "PERFMON": ["perf_event_open"],
    "DAC_READ_SEARCH": ["open_by_handle_at"],
}  # fmt: skip

# CLONE_NEWNS | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWCGROUP
CLONE_NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
CLONE_NAMESPACES |= 0x40000000 | 0x02000000
# PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, and the query value
PERSONALITIES = (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)


def profile(caps: list[str]) -> dict[str, Any]:
    """The RuntimeDefault profile for a container holding `caps`."""
    held = {c.upper().removeprefix("CAP_") for c in caps}
    rules: list[dict[str, Any]] = [
        {"names": ALLOW + BY_ARCH.get(platform.machine(), []), "action": "SCMP_ACT_ALLOW"}
    ]
    for value in PERSONALITIES:
        rules.append(
            {
                "names": ["personality"],
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": value, "op": "SCMP_CMP_EQ"}],
            }
        )
    for cap, names in BY_CAP.items():
        if cap in held:
            rules.append({"names": names, "action": "SCMP_ACT_ALLOW"})
    if "SYS_ADMIN" not in held:
        # the first argument of clone is its flags on every architecture
        # skiff runs on but s390x, where it is the second
        index = 1 if platform.machine() == "s390x" else 0
        rules.append(
            {
                "names": ["clone"],
                "action": "SCMP_ACT_ALLOW",
                "args": [
                    {
                        "index": index,
                        "value": CLONE_NAMESPACES,
                        "valueTwo": 0,
                        "op": "SCMP_CMP_MASKED_EQ",
                    }
                ],
            }
        )
        rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": errno.EPERM, "syscalls": rules}
