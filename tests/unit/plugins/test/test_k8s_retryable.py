"""k8s_retryable: which failed kubernetes.core results another try may get past.

The `reason` values are what kubernetes.core's runner puts there: the HTTP reason phrase of the API's answer."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.test.k8s_retryable import k8s_retryable

DELETED_BY_ANOTHER_RUN = {'failed': True, 'reason': 'Not Found',
                          'msg': 'Failed to delete object: {"kind": "Status", "reason": "NotFound", "code": 404}'}


@pytest.mark.parametrize('reason', ['Conflict', 'Too Many Requests', 'Internal Server Error', 'Bad Gateway',
                                    'Service Unavailable', 'Gateway Timeout'])
def test_transient_answers_are_retried_by_applies_and_removals(reason):
    assert k8s_retryable({'failed': True, 'reason': reason})
    assert k8s_retryable({'failed': True, 'reason': reason}, removal=True)


def test_a_404_is_retried_only_by_a_removal():
    assert not k8s_retryable(DELETED_BY_ANOTHER_RUN), 'an apply that meets 404 (its namespace missing) would only fail again'
    assert k8s_retryable(DELETED_BY_ANOTHER_RUN, removal=True)


@pytest.mark.parametrize('result', [{'failed': True, 'reason': 'Forbidden'}, {'failed': True, 'reason': 'Unauthorized'},
                                    {'failed': True, 'reason': 'Unprocessable Entity'},
                                    {'failed': True, 'msg': 'Failed to get client due to [Errno 111] Connection refused'},
                                    {'changed': True}, {'failed': False, 'reason': 'Not Found'}])
def test_other_results_are_final(result):
    assert not k8s_retryable(result) and not k8s_retryable(result, removal=True)


def test_a_result_must_be_a_registered_result():
    with pytest.raises(AnsibleFilterError, match='tests a registered task result, not str'):
        k8s_retryable('failed')
