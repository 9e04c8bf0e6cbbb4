# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Running a program on the node: the collection's one command runner.

An argv list, never a shell; untranslated output (LC_ALL=C); a time limit, so a hung
program (an nvidia-smi waiting on a wedged GPU) cannot block a run for ever; and, for a
program the user points at by path, a message that says what is wrong with that path.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

# Parsable, untranslated output whatever the node's locale.
C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C'}
# Seconds a command may run. Package installs and DKMS builds take minutes; queries take seconds.
DEFAULT_TIMEOUT = 120
LONG_TIMEOUT = 1800
NOT_INSTALLED = 127
TIMED_OUT = 124  # what coreutils' timeout returns when it had to stop the command


class CommandError(GpuOpsError):
    """A program that cannot be run: a bad path, or one that outlived its time limit."""


def path_problem(path):
    """Why the program at `path` cannot be run, or None when it can."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return '%s does not exist' % path
    except OSError as exc:
        return '%s cannot be examined: %s' % (path, exc.strerror)
    if stat.S_ISDIR(info.st_mode):
        return '%s is a directory, not a program' % path
    if not stat.S_ISREG(info.st_mode):
        return '%s is not a regular file' % path
    if not os.access(path, os.X_OK):
        return '%s is not executable' % path
    return None


def run(module, argv, environ=None, timeout=DEFAULT_TIMEOUT):
    """(rc, stdout, stderr) of argv with LC_ALL=C (or `environ`).

    rc 127 when the program is not installed (a name not found on PATH, or a path that
    cannot be run: stderr says why); rc 124 when it ran past `timeout` seconds and was stopped
    (stderr names the command and the limit).
    """
    program = argv[0]
    if os.path.isabs(program):
        problem = path_problem(program)
        if problem:
            return NOT_INSTALLED, '', problem
        binary = program
    else:
        binary = module.get_bin_path(program)
        if binary is None:
            return NOT_INSTALLED, '', '%s: command not found' % program
    command = [binary] + list(argv[1:])
    limiter = module.get_bin_path('timeout') if timeout else None
    if limiter:
        # KILL a few seconds after TERM: a program stuck in the kernel ignores TERM.
        command = [limiter, '--kill-after=5', str(int(timeout))] + command
    rc, out, err = module.run_command(command, environ_update=environ or C_LOCALE)
    if limiter and rc in (TIMED_OUT, 128 + 9):
        return TIMED_OUT, out, '%s did not finish within %d s and was stopped%s' % (
            ' '.join(argv), timeout, (': ' + err.strip()) if err and err.strip() else '')
    return rc, out, err


def runner(module, environ=None, timeout=DEFAULT_TIMEOUT):
    """A callable argv -> (rc, stdout, stderr) over `run`, for the pure gatherers that take one."""
    return lambda argv: run(module, argv, environ=environ, timeout=timeout)


def checked(module, argv, environ=None, timeout=DEFAULT_TIMEOUT):
    """stdout of argv; CommandError naming the command, its status and its message when it fails."""
    rc, out, err = run(module, argv, environ=environ, timeout=timeout)
    if rc != 0:
        raise CommandError('%s failed (rc=%d): %s' % (' '.join(argv), rc, ' '.join((err or out or 'no output').split())))
    return out
