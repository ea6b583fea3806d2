"""Writes that cannot be torn, redirected or lost.

- A file is written to a temporary file beside it, created exclusively (O_EXCL|O_NOFOLLOW, so a
  planted file or symlink is never written through), fsync'd, then renamed over the target
  (os.replace is atomic on POSIX): a reader or a kill sees the old file or the new one, never a
  mix. Temporary names are `.NAME.tbtmp-XXXXXXXX`; one left by a killed run is removed by the
  next write to NAME (under the lock, so never a live writer's).
- The replaced file's mode is kept; a new file gets 0o666 & ~umask, as `open()` would give it.
- `NAME.bak` (the user's file before the change) is written the same way, so a symlink planted at
  NAME.bak is replaced by the backup, its target never touched.
- A symlinked target: the real file behind it is edited (the link is resolved once, before
  anything is read, and every write goes to that path), so the link keeps pointing at the
  updated workbook.
- An advisory lock (flock on the target's folder, so no lock file is left behind) makes a second
  writer wait up to LOCK_WAIT_S seconds, then refuses it: two read-modify-writes never interleave
  (on a file system without flock, such as some network shares, the write goes ahead unlocked).
- The temporary file is removed on every exit path: exceptions, Ctrl-C, and SIGTERM (turned into
  SystemExit while a write is under way). Only SIGKILL leaves one, which the next write removes.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import signal
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .safexml import BadWorkbookError

TMP_MARK = ".tbtmp-"
LOCK_WAIT_S = 30.0
_held: dict[str, int] = {}  # folder -> depth of this process's lock on it


def real_target(path: Path | str) -> Path:
    """The file a write to `path` must replace: a symlink resolved once (to its final target)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def new_file_mode() -> int:
    """0o666 minus the process's umask: the mode `open()` gives a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def locked(target: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold the advisory write lock for `target`'s folder (re-entrant within this process)."""
    folder = os.path.realpath(Path(target).parent)
    if folder in _held:
        _held[folder] += 1
        try:
            yield
        finally:
            _held[folder] -= 1
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    break  # a file system without flock (ENOLCK, EOPNOTSUPP): the rename is still atomic
                if time.monotonic() >= deadline:
                    raise BadWorkbookError(f"{target}: another trainbudget is writing in {folder}; "
                                           "nothing was changed, try again") from None
                time.sleep(0.05)
        _held[folder] = 1
        try:
            yield
        finally:
            del _held[folder]
    finally:
        os.close(fd)  # releases the flock


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}{TMP_MARK}{secrets.token_hex(4)}")


def clean_stale(target: Path) -> list[Path]:
    """Remove temporary files a killed write to `target` left behind (call under the lock)."""
    removed = []
    for p in target.parent.glob(f".{target.name}{TMP_MARK}*"):
        if p.is_file() or p.is_symlink():
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _create_exclusive(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.close(fd)


def _fsync(path: Path, directory: bool = False) -> None:
    flags = (os.O_RDONLY | os.O_DIRECTORY) if directory else (os.O_RDONLY | os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems (and folders on some platforms) cannot fsync
    finally:
        os.close(fd)


@contextmanager
def atomic_path(target: Path | str, mode: int | None = None) -> Iterator[Path]:
    """A fresh temporary path beside `target`, renamed onto it when the block succeeds.

    `target` is written as given (resolve a symlink first with real_target). The result keeps
    the replaced file's mode (a new file: 0o666 & ~umask) unless `mode` is given.
    """
    target = Path(target)
    with locked(target), _sigterm_as_exit():
        clean_stale(target)
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = new_file_mode()
        tmp = _temp_name(target)
        try:
            _create_exclusive(tmp)
        except OSError as e:  # name the file the user asked for, not our temporary one
            raise OSError(e.errno, f"cannot create a file in its folder ({e.strerror})", str(target)) from None
        try:
            yield tmp
            if tmp.is_symlink():
                raise BadWorkbookError(f"{tmp} was replaced by a symlink while being written; nothing changed")
            os.chmod(tmp, mode)
            _fsync(tmp)
            os.replace(tmp, target)
            _fsync(target.parent, directory=True)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)


def write_bytes(target: Path, data: bytes, mode: int | None = None) -> None:
    """`data` written atomically to `target` (see atomic_path)."""
    with atomic_path(target, mode) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def backup(target: Path) -> Path:
    """`target`'s bytes and mode saved as `NAME.bak` beside it, atomically; a symlink planted at
    NAME.bak is replaced, never followed. Returns the backup's path."""
    target = Path(target)
    bak = target.with_name(target.name + ".bak")
    if os.path.lexists(bak) and os.path.isdir(bak) and not os.path.islink(bak):
        raise BadWorkbookError(f"{bak} is a folder; cannot keep the backup there, nothing was changed")
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        data = f.read()
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    write_bytes(bak, data, mode)
    return bak


def keep_backup(target: Path) -> Path | None:
    """Before a new file replaces `target`: a regular file there is kept as NAME.bak (see backup);
    a symlink is not followed, so the write that follows replaces the link itself and its target
    stays as it was. Returns the backup's path, or None when nothing was kept."""
    target = Path(target)
    if target.is_symlink() or not target.is_file():
        return None
    return backup(target)
