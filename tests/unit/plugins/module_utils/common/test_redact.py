# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Credentials redacted from what the collection shows of config files (common/redact.py, files.diff_entry).

SOURCE of the containerd forms: containerd/containerd docs/cri/registry.md (release/1.7, "Configure Registry
Credentials"): the table `[plugins."io.containerd.grpc.v1.cri".registry.configs."<host>".auth]` holds username,
password, auth and identitytoken (the fields of Docker's config.json auths), a password may be a TOML literal string
(a GCR JSON key); containerd 2.x reads the same table under plugins."io.containerd.cri.v1.images" (docs/cri/config.md,
release/2.0). Docker's config.json `auths.<host>.auth` is base64 of user:password.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.redact import REDACTED, redact_data, redact_text

CRI = 'plugins."io.containerd.grpc.v1.cri"'
CONFIG = ('version = 2\n'
          '[%s.registry.configs."mirror.example:5000".auth]\n'
          '  username = "robot"\n'
          '  password = "pa$$-word"\n'
          '  auth = "cm9ib3Q6cGEkJC13b3Jk"\n'
          '  identitytoken = "id-token-value"\n'
          '[%s.containerd.runtimes.runc]\n'
          '  runtime_type = "io.containerd.runc.v2"\n' % (CRI, CRI))
CONFIG_REDACTED = CONFIG.replace('pa$$-word', REDACTED).replace('cm9ib3Q6cGEkJC13b3Jk', REDACTED).replace('id-token-value', REDACTED)


@pytest.mark.parametrize('text, expected', [
    pytest.param(CONFIG, CONFIG_REDACTED, id='containerd auth table (v2)'),
    pytest.param('[plugins."io.containerd.cri.v1.images".registry.configs."r.example".auth]\npassword = "x1"\n',
                 '[plugins."io.containerd.cri.v1.images".registry.configs."r.example".auth]\npassword = "%s"\n' % REDACTED,
                 id='containerd 2.x images plugin'),
    pytest.param("password = '{\"type\": \"service_account\", \"private_key\": \"k\"}'\n", "password = '%s'\n" % REDACTED,
                 id='literal string (a GCR JSON key)'),
    pytest.param('identitytoken = """line one\nline two"""\nx = 1\n', 'identitytoken = """%s"""\nx = 1\n' % REDACTED, id='multi-line string'),
    pytest.param('auth = { username = "u", password = "p" }\n', 'auth = { username = "u", password = "%s" }\n' % REDACTED, id='inline table'),
    pytest.param('%s.registry.configs."h".auth.password = "p"\n' % CRI, '%s.registry.configs."h".auth.password = "%s"\n' % (CRI, REDACTED),
                 id='dotted key'),
    pytest.param('  "password" = "p\\"q"\n', '  "password" = "%s"\n' % REDACTED, id='quoted key, escaped quote'),
    pytest.param('[%s.registry.headers]\n  Authorization = ["Basic YTpi",\n    "Bearer t"]\n' % CRI,
                 '[%s.registry.headers]\n  Authorization = ["%s",\n    "%s"]\n' % (CRI, REDACTED, REDACTED), id='header array'),
    pytest.param('# password = "old"\n', '# password = "%s"\n' % REDACTED, id='commented out'),
    pytest.param('-  password = "old"\n+  password = "new"\n+  auth = "YTpi"\n',
                 '-  password = "%s"\n+  password = "%s"\n+  auth = "%s"\n' % (REDACTED, REDACTED, REDACTED), id='unified diff lines'),
    pytest.param('-password = "old"\n', '-password = "%s"\n' % REDACTED, id='diff prefix stuck to the key'),
    pytest.param('{"auths": {"r.example": {"auth": "YTpi", "identitytoken": "t", "email": "a@b"}}}',
                 '{"auths": {"r.example": {"auth": "%s", "identitytoken": "%s", "email": "a@b"}}}' % (REDACTED, REDACTED),
                 id='Docker config auths (compact JSON)'),
    pytest.param('{\n    "auths": {\n        "r.example": {\n            "auth": "YTpi"\n        }\n    }\n}\n',
                 '{\n    "auths": {\n        "r.example": {\n            "auth": "%s"\n        }\n    }\n}\n' % REDACTED, id='indented JSON'),
    pytest.param('Authorization: Bearer abc.def\napi_key: k-1\n', 'Authorization: %s\napi_key: %s\n' % (REDACTED, REDACTED), id='YAML plain'),
    pytest.param('deb [signed-by=/k.gpg] https://user:s3cret@mirror.example/cuda /\n',
                 'deb [signed-by=/k.gpg] https://user:%s@mirror.example/cuda /\n' % REDACTED, id='password in a URL'),
])
def test_credentials_are_redacted(text, expected):
    assert redact_text(text) == expected


@pytest.mark.parametrize('text', [
    pytest.param('version = 2\n[%s.containerd]\n  default_runtime_name = "nvidia"\n' % CRI, id='containerd'),
    pytest.param('[%s.containerd.runtimes.nvidia.options]\n  BinaryName = "/usr/bin/nvidia-container-runtime"\n' % CRI, id='BinaryName'),
    pytest.param('[%s.registry.configs."gcr.io".auth]\n  username = "robot"\n' % CRI, id='table header, username'),
    pytest.param('{"default-runtime": "nvidia", "authorization-plugins": ["authz"], "runtimes": {"nvidia": {"path": "nvidia"}}}',
                 id='Docker daemon.json'),
    pytest.param('[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n[crio.image]\n'
                 'global_auth_file = "/etc/crio/auth.json"\n', id='CRI-O (the auth file is a path)'),
    pytest.param('{"automountServiceAccountToken": false, "secretName": "pull", "imagePullSecrets": [{"name": "pull"}]}',
                 id='Kubernetes fields that are no credentials'),
    pytest.param("note = 'it''s'\nname = \"password = x\"\n", id='a key inside a string is no key'),
    pytest.param('', id='empty'),
])
def test_other_text_is_kept(text):
    assert redact_text(text) == text


def test_data_structures():
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'pull'}, 'type': 'kubernetes.io/dockerconfigjson',
              'data': {'.dockerconfigjson': 'eyJhdXRocyI6e319'}, 'stringData': {'token': 'x'}}
    assert redact_data([secret, {'name': 'mirror', 'password': 'p', 'headers': {'Authorization': ['Basic a']}, 'count': 2,
                                 'config': 'password = "q"\n'}]) == [
        dict(secret, data={'.dockerconfigjson': REDACTED}, stringData={'token': REDACTED}),
        {'name': 'mirror', 'password': REDACTED, 'headers': {'Authorization': [REDACTED]}, 'count': 2, 'config': 'password = "%s"\n' % REDACTED}]
    assert secret['data'] == {'.dockerconfigjson': 'eyJhdXRocyI6e319'}, 'a copy: the original is kept'


def test_diff_entry_redacts_both_sides():
    """A module's --diff of a 0600 containerd config with registry credentials: both sides are whole files."""
    after = CONFIG.replace('version = 2\n', 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n')
    entry = files.diff_entry('/etc/containerd/config.toml', CONFIG.encode(), after.encode())
    for side in ('before', 'after'):
        assert 'pa$$-word' not in entry[side] and 'cm9ib3Q6cGEkJC13b3Jk' not in entry[side] and 'id-token-value' not in entry[side], entry
    assert entry['before'] == CONFIG_REDACTED and 'imports = ["/etc/containerd/conf.d/*.toml"]' in entry['after']
    assert files.diff_entry('/x', None, b'a = 1\n') == {'before_header': '/x (absent)', 'after_header': '/x', 'before': '', 'after': 'a = 1\n'}


def test_long_words_stay_fast():
    """A key-like word is looked at from its start only: a long base64 blob (an inline CA) costs no quadratic scan."""
    blob = 'A' * 20000
    started = time.monotonic()
    assert redact_text('ca = "%s"\n%s\n' % (blob, blob)) == 'ca = "%s"\n%s\n' % (blob, blob)
    # About 0.01 s; a scan from every position of the bare word takes seconds.
    assert time.monotonic() - started < 1
