"""docs/coming-from-gpu-operator.md shows the tables tools/policy_fields.py makes of plugins/plugin_utils/cluster/fields.py
(every ClusterPolicy field, the chart values that are none), and the tool finds the fields of a CRD the table lacks."""
import importlib.util

import pytest

from tests.cluster.helpers import REPO

SPEC = importlib.util.spec_from_file_location('policy_fields', REPO / 'tools' / 'policy_fields.py')
policy_fields = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(policy_fields)
CRD = REPO / 'tests' / 'fixtures' / 'gpu-operator' / 'nvidia.com_clusterpolicies.yaml'


def test_the_page_shows_the_tables_of_fields_py():
    text = policy_fields.PAGE.read_text(encoding='utf-8')
    assert policy_fields.rewrite(text, policy_fields.blocks(policy_fields.load())) == text, 'run tools/policy_fields.py'


def test_each_field_is_one_row_of_the_page():
    fields = policy_fields.load()
    text = policy_fields.PAGE.read_text(encoding='utf-8')
    for path, row in fields.FIELDS.items():
        assert text.count('| `%s` | %s | %s' % (path, row[0], row[1] if row[1] != fields.REFUSED else 'refused unless')) == 1, path


def test_a_field_missing_from_the_table_is_named(tmp_path):
    fields = policy_fields.load()
    assert policy_fields.missing(str(CRD), fields) == []
    del fields.FIELDS['gds.enabled']
    assert policy_fields.missing(str(CRD), fields) == ["    'gds.enabled': ('boolean', REFUSED, 'why'),  # TODO: honoured, not applicable or refused"]


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(policy_fields.PageError, match='lacks the markers'):
        policy_fields.rewrite('# no table here\n', policy_fields.blocks(policy_fields.load()))
