"""The README's support matrix is what tools/support_matrix.py makes of the tests' SUPPORT_MATRIX rows, and every row
names a test that exists."""
import importlib.util

import pytest

from tests.cluster.helpers import REPO

SPEC = importlib.util.spec_from_file_location('support_matrix', REPO / 'tools' / 'support_matrix.py')
support_matrix = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(support_matrix)


def test_the_readme_shows_the_matrix_the_tests_declare():
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    assert support_matrix.rewrite(text, support_matrix.table(support_matrix.rows())) == text, 'run tools/support_matrix.py'


def test_every_distribution_and_evidence_kind_has_a_row():
    found = support_matrix.rows()
    assert {row['evidence'] for row in found} == set(support_matrix.EVIDENCE)
    assert {'k3s', 'RKE2', 'k0s', 'MicroK8s'} <= {row['distribution'] for row in found}


@pytest.mark.parametrize('row, problem', [
    ({'os': 'x'}, 'a row has the keys'),
    (dict(os='x', runtime='y', distribution='z', evidence='works', how='h', test='tests/unit/test_support_matrix.py::test_x'), 'evidence'),
    (dict(os='x', runtime='y', distribution='z', evidence='not supported', how='h', test='tests/unit/test_support_matrix.py::test_gone'),
     'does not exist'),
])
def test_a_bad_row_is_refused(tmp_path, row, problem):
    module = tmp_path / 'test_rows.py'
    module.write_text('SUPPORT_MATRIX = [%r]\n' % (row,))
    with pytest.raises(support_matrix.MatrixError, match=problem):
        support_matrix.rows(tmp_path)


def test_rows_must_be_a_literal(tmp_path):
    (tmp_path / 'test_rows.py').write_text('SUPPORT_MATRIX = [dict(os="x")]\n')
    with pytest.raises(support_matrix.MatrixError, match='must be a literal'):
        support_matrix.rows(tmp_path)
