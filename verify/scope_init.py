"""The first process of a scope (``verify.scope``): make the file system read-only but for the
folders the step may write, then become the step's command.

Run by ``unshare --user --map-root-user --mount --pid --fork --kill-child --mount-proc`` as
``python -I -S verify/scope_init.py SPEC -- CMD...`` (standard library only, no site-packages,
nothing of the checkout imported: it must hold whatever an earlier scope left). SPEC is JSON:
``{"uid": N, "gid": N, "binds": [[path, writable], ...]}``. In that order:

1. each bound folder is copied as a detached mount (``open_tree(OPEN_TREE_CLONE)``) before
   anything covers it;
2. every mount of the namespace becomes read-only (``mount_setattr(/, AT_RECURSIVE,
   MOUNT_ATTR_RDONLY)``), ``/proc`` (the scope's own) excepted;
3. fresh, empty ``tmpfs`` on ``/tmp``, ``/var/tmp`` and ``/dev/shm``; ``HOME``, ``TMPDIR`` and
   the XDG folders point into the new ``/tmp``;
4. the bound folders are attached at their paths, read-only unless marked writable;
5. a nested user namespace and mount namespace (``unshare(CLONE_NEWUSER | CLONE_NEWNS)``)
   mapping the caller's user back to itself: every mount above is then *locked*
   (``mount_namespaces(7)``): the command cannot unmount, move or remount any of them
   writable, as root of any namespace it makes. After ``execve`` a user other than root keeps
   no capability at all.

So the step can write only its bound writable folders and its own temporary files: not the
runner's files (the actions a later step runs, ``$GITHUB_ENV`` and the other command files),
not the virtual environment or the checkout the verifier imports, not the user's home. Any
failure prints one line and exits 125 before the command runs.
"""

import ctypes
import json
import os
import sys
from typing import Any

SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # the same number on every architecture
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
MS_NOSUID, MS_NODEV = 0x2, 0x4
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")
SCOPE_HOME = "/tmp/scope-home"
FAILED = 125

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("attr_set", "attr_clr", "propagation", "userns_fd")]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def clone_tree(path: str) -> int:
    return _check(
        libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE),
        f"open_tree {path}",
    )


def set_attr(fd: int, path: str, attr_set: int = 0, attr_clr: int = 0) -> None:
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    flags = AT_RECURSIVE | (AT_EMPTY_PATH if fd != AT_FDCWD else 0)
    _check(
        libc.syscall(SYS_MOUNT_SETATTR, fd, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)),
        f"mount_setattr {path or fd}",
    )


def attach(fd: int, path: str) -> None:
    _check(
        libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH), f"move_mount {path}"
    )


def tmpfs(path: str) -> None:
    _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777"), f"mount tmpfs {path}")


def lock(uid: int, gid: int) -> None:
    """A nested user and mount namespace, the caller's user mapped back to itself."""
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} 0 1\n"), ("gid_map", f"{gid} 0 1\n")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def scope(spec: dict[str, Any]) -> dict[str, str]:
    """Do steps 1 to 5; return the environment for the command."""
    binds = [(path, writable, clone_tree(path)) for path, writable in spec["binds"]]
    set_attr(AT_FDCWD, "/", attr_set=MOUNT_ATTR_RDONLY)
    set_attr(AT_FDCWD, "/proc", attr_clr=MOUNT_ATTR_RDONLY)  # the scope's own; uid_map is written there
    for path in PRIVATE_TMP:
        if os.path.isdir(path):
            tmpfs(path)
    for path, writable, fd in binds:
        os.makedirs(path, exist_ok=True)  # a folder under a new tmpfs; elsewhere it exists already
        set_attr(fd, "", attr_set=0 if writable else MOUNT_ATTR_RDONLY, attr_clr=MOUNT_ATTR_RDONLY if writable else 0)
        attach(fd, path)
        os.close(fd)
    env = dict(os.environ)
    for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"):
        env.pop(name, None)  # read-only here anyway: the step has no business with the runner's command files
    os.makedirs(SCOPE_HOME, mode=0o700)
    env.update(
        HOME=SCOPE_HOME,
        TMPDIR="/tmp",
        XDG_CONFIG_HOME=f"{SCOPE_HOME}/.config",
        XDG_CACHE_HOME=f"{SCOPE_HOME}/.cache",
        XDG_DATA_HOME=f"{SCOPE_HOME}/.local/share",
        XDG_RUNTIME_DIR=f"{SCOPE_HOME}/.run",
    )
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    lock(spec["uid"], spec["gid"])
    return env


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("verify/scope_init.py: usage: SPEC -- CMD...", file=sys.stderr)
        return FAILED
    spec, cmd = json.loads(argv[0]), argv[2:]
    try:
        env = scope(spec)
    except OSError as exc:
        print(f"verify/scope_init.py: cannot confine the scope's files: {exc}", file=sys.stderr)
        return FAILED
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as exc:
        print(f"verify/scope_init.py: {cmd[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return FAILED  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
