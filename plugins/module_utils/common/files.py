# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reading, diffing and atomically replacing live config files on a node."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fcntl
import hashlib
import os
import re
import stat
import tempfile
import time

from ansible.module_utils.common.text.converters import to_native, to_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.redact import redact_text

# How long a run waits for another run holding the same directory lock.
LOCK_TIMEOUT = 120
LOCK_POLL = 0.05
TEMP_SUFFIX = '.tmp'


class FileError(GpuOpsError):
    """A path cannot be read or written; the message says why."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def _reason(exc):
    if isinstance(exc, OSError):
        return to_native(exc.strerror or exc)
    # atomic_move raises plain Exceptions that name the files; the OSError behind one says why.
    cause = exc.__cause__
    return '%s (%s)' % (to_native(exc), _reason(cause)) if isinstance(cause, OSError) else to_native(exc)


def read_bytes(path, limit=None):
    """Return the file's bytes, or None when it does not exist.

    A symlink is followed. A directory, a dangling symlink or a symlink loop,
    anything but a regular file (a FIFO would block the read), a file larger
    than `limit` bytes or an unreadable file raise FileError.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if os.path.islink(path):
            raise FileError('%s is a symlink to %s, which does not exist' % (path, os.readlink(path)))
        return None
    except OSError as exc:
        raise FileError('cannot read %s: %s' % (path, _reason(exc)))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise FileError('%s is a directory, expected a file' % path)
        raise FileError('%s is not a regular file' % path)
    with os.fdopen(fd, 'rb') as handle:
        try:
            data = handle.read() if limit is None else handle.read(limit + 1)
        except OSError as exc:
            raise FileError('cannot read %s: %s' % (path, _reason(exc)))
    if limit is not None and len(data) > limit:
        raise FileError('%s is larger than %d bytes; not reading it' % (path, limit))
    return data


def missing_directories(path):
    """The directories above `path` that do not exist, outermost first (what make_directories would create)."""
    missing = []
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(directory):
        missing.insert(0, directory)
        directory = os.path.dirname(directory)
    return missing


def check_writable(path, create_directories=False):
    """Fail early (before anything is written, and in check mode) when `path` cannot be replaced or created.

    With `create_directories`, missing directories above it count as ones the run will create: the
    nearest existing one must then be writable.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or '.'
    if create_directories and missing_directories(target):
        directory = os.path.dirname(missing_directories(target)[0])
    elif not os.path.isdir(directory):
        raise FileError('cannot write %s: directory %s does not exist' % (path, directory))
    if not os.path.isdir(directory):
        raise FileError('cannot write %s: %s is not a directory' % (path, directory))
    # Replacing a file needs write access to its directory (temp file + rename);
    # a read-only (or immutable) file or file system is reported as such.
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise FileError('cannot write %s: the file is read-only (permissions, an immutable file or a read-only file system)' % path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise FileError('cannot write %s: directory %s is not writable (read-only file system or permissions)' % (path, directory))


def make_directories(directories, mode=0o755):
    """Create `directories` (outermost first, as missing_directories() lists them) with `mode`; OS errors become FileError."""
    for directory in directories:
        try:
            os.mkdir(directory)
            # mkdir applies the umask; the mode asked for is the mode given.
            os.chmod(directory, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise FileError('cannot create directory %s: %s' % (directory, _reason(exc)))


def remove_empty_directory(directory):
    """Remove `directory` when it exists and is empty; True when it was removed."""
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False  # someone put files there since: they keep it
        raise FileError('cannot remove directory %s: %s' % (directory, _reason(exc)))
    return True


def _sync_directory(directory):
    # The rename is only durable once the directory entry is on disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_prefix(target):
    return '.%s.' % os.path.basename(target)


def stale_temp_files(path, temp_dir=None):
    """Temp files that write_atomic(path, temp_dir=temp_dir) left behind when it was killed before its rename."""
    target = os.path.realpath(path)
    directory = temp_dir or os.path.dirname(target)
    # mkstemp's random part: 8 characters of [a-z0-9_].
    pattern = re.compile(r'%s[a-z0-9_]{8}%s\Z' % (re.escape(_temp_prefix(target)), re.escape(TEMP_SUFFIX)))
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(os.path.join(directory, name) for name in names if pattern.match(name))


def _umask():
    current = os.umask(0)
    os.umask(current)
    return current


def backup_copy(path):
    """Copy `path` beside it as Ansible's backup_local names a backup (PATH.PID.TIMESTAMP~), with its mode and owner.

    The copy is written to a temp file and renamed: it appears complete or not at all (backup_local copies in place,
    so a full disk leaves an empty or partial backup). Returns the backup's name; FileError when it cannot be made.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    name = '%s.%s.%s' % (target, os.getpid(), time.strftime('%Y-%m-%d@%H:%M:%S~', time.localtime(time.time())))
    tmp = None
    try:
        data = read_bytes(target)
        info = os.stat(target)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=_temp_prefix(target), suffix=TEMP_SUFFIX)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            os.fchown(handle.fileno(), info.st_uid, info.st_gid)
            os.fsync(handle.fileno())
        os.rename(tmp, name)
        tmp = None
        _sync_directory(directory)
    except (OSError, FileError) as exc:
        raise FileError('cannot back up %s to %s: %s' % (path, name, _reason(exc) if isinstance(exc, OSError) else exc))
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return name


def write_atomic(module, path, data, mode=None, temp_dir=None):
    """Replace `path` with `data` via a temp file and a rename.

    The temp file is made in `temp_dir` (default: the file's own directory;
    same file system). An existing file keeps its mode and owner
    (module.atomic_move copies them); a symlink keeps pointing at the file it
    names; a new file appears with `mode` (permission bits, default 0666 minus
    the umask). Whatever fails, the file is either the old or the new one and
    no temp file is left behind (only a killed process leaves one, see
    stale_temp_files); failures raise FileError.
    """
    target = os.path.realpath(path)
    check_writable(path)
    directory = os.path.dirname(target)
    existed = os.path.exists(target)
    new_mode = (0o666 & ~_umask()) if mode is None else mode
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=temp_dir or directory, prefix=_temp_prefix(target), suffix=TEMP_SUFFIX)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            if not existed:
                # The rename makes the file appear with its final mode; not mkstemp's 0600 first.
                os.fchmod(handle.fileno(), new_mode)
            os.fsync(handle.fileno())
        # atomic_move gives a new file 0666 minus the umask after the rename; with
        # this umask that is `new_mode` again, so a private file never widens.
        umask = os.umask(0o777 & ~new_mode) if not existed else None
        try:
            module.atomic_move(tmp, target)
        finally:
            if umask is not None:
                os.umask(umask)
        tmp = None
        _sync_directory(directory)
    except Exception as exc:  # atomic_move raises plain Exception; everything here means the write failed
        raise FileError('cannot write %s: %s' % (path, _reason(exc)))
    finally:
        # Also reached on SystemExit (an atomic_move that calls fail_json).
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def remove(module, path):
    """Delete `path` if present."""
    if not os.path.lexists(path):
        return
    check_writable(path)
    try:
        os.unlink(path)
        _sync_directory(os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        raise FileError('cannot remove %s: %s' % (path, _reason(exc)))


def lock_directory(directory, timeout=None):
    """Take an exclusive lock on `directory`, waiting up to `timeout` seconds (LOCK_TIMEOUT) for another holder.

    flock on the directory itself creates no file, so a node looks the same
    before and after. Returns the descriptor to hand to unlock(), or None when
    the directory does not exist (nothing can be written there then).
    """
    timeout = LOCK_TIMEOUT if timeout is None else timeout
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileError('cannot lock %s: %s' % (directory, _reason(exc)))
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            busy = exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
            if not busy or time.monotonic() >= deadline:
                os.close(fd)
                reason = 'another run still holds it after %s seconds' % timeout if busy else _reason(exc)
                raise FileError('cannot lock %s: %s' % (directory, reason))
        time.sleep(LOCK_POLL)


def unlock(fd):
    if fd is not None:
        os.close(fd)


def diff_entry(path, before, after):
    """One entry of Ansible's diff list; None bytes mean the file is absent.

    Both sides are whole files, shown at -vvv and by --diff: credentials in them (a registry password of a 0600
    containerd config) are redacted.
    """
    return {
        'before_header': path if before is not None else '%s (absent)' % path,
        'after_header': path if after is not None else '%s (absent)' % path,
        'before': redact_text(to_text(before or b'')),
        'after': redact_text(to_text(after or b'')),
    }
