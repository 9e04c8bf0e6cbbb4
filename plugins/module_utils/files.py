# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reading, diffing and atomically replacing live config files on a node."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import tempfile

from ansible.module_utils.common.text.converters import to_native, to_text


class FileError(Exception):
    """A path cannot be read or written; the message says why."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read_bytes(path):
    """Return the file's bytes, or None when it does not exist.

    A directory, a dangling symlink or an unreadable file raise FileError.
    """
    if os.path.isdir(path):
        raise FileError('%s is a directory, expected a file' % path)
    if os.path.islink(path) and not os.path.exists(path):
        raise FileError('%s is a symlink to %s, which does not exist' % (path, os.readlink(path)))
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileError('cannot read %s: %s' % (path, to_native(exc.strerror or exc)))


def check_writable(path):
    """Fail early (before anything is written) when `path` cannot be replaced or created."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or '.'
    if not os.path.isdir(directory):
        raise FileError('cannot write %s: directory %s does not exist' % (path, directory))
    # Replacing a file needs write access to its directory (temp file + rename);
    # a read-only file or file system is reported as such.
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise FileError('cannot write %s: the file is read-only' % path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise FileError('cannot write %s: directory %s is not writable (read-only file system or permissions)' % (path, directory))


def write_atomic(module, path, data, backup=False, mode=None):
    """Replace `path` with `data` via a temp file in the same directory and a rename.

    An existing file keeps its mode and owner (module.atomic_move copies them);
    a symlink keeps pointing at the file it names; a new file gets `mode` when
    given. Returns the backup file name or None.
    """
    target = os.path.realpath(path)
    check_writable(path)
    existed = os.path.exists(target)
    backup_file = module.backup_local(target) if backup and os.path.exists(target) else None
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix='.%s.' % os.path.basename(target), suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        module.atomic_move(tmp, target)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if mode is not None and not existed:
        # atomic_move gives a new file the umask's mode; `mode` is for new files only.
        os.chmod(target, mode)
    return backup_file or None


def remove(module, path, backup=False):
    """Delete `path` if present; returns the backup file name or None."""
    if not os.path.lexists(path):
        return None
    check_writable(path)
    backup_file = module.backup_local(os.path.realpath(path)) if backup else None
    os.unlink(path)
    return backup_file or None


def diff_entry(path, before, after):
    """One entry of Ansible's diff list; None bytes mean the file is absent."""
    return {
        'before_header': path if before is not None else '%s (absent)' % path,
        'after_header': path if after is not None else '%s (absent)' % path,
        'before': to_text(before or b''),
        'after': to_text(after or b''),
    }
