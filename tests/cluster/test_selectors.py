"""Label and field selectors (pure functions, no server)."""
import pytest

from tests.standin import selectors

OBJ = {'metadata': {'name': 'n1', 'namespace': 'ns', 'labels': {'app': 'web', 'tier': 'front'}}, 'spec': {'nodeName': 'gpu1', 'flag': True}}

LABEL_CASES = [
    ('', True), ('app=web', True), ('app==web', True), ('app=db', False), ('app!=db', True), ('app!=web', False),
    ('app', True), ('!app', False), ('!missing', True), ('app in (db, web)', True), ('app notin (db,web)', False),
    ('app=web,tier=front', True), ('app=web,tier=back', False), ('missing!=x', True),
]


@pytest.mark.parametrize('selector,matches', LABEL_CASES)
def test_label_selector(selector, matches):
    assert selectors.label_selector(selector)(OBJ) is matches


FIELD_CASES = [
    ('metadata.name=n1', True), ('metadata.name==n2', False), ('metadata.name!=n2', True),
    ('metadata.namespace=ns,spec.nodeName=gpu1', True), ('spec.nodeName=gpu2', False), ('spec.flag=true', True),
    ('status.phase=', True),
]


@pytest.mark.parametrize('selector,matches', FIELD_CASES)
def test_field_selector(selector, matches):
    assert selectors.field_selector(selector)(OBJ) is matches


@pytest.mark.parametrize('selector', ['app=(x', '!app=x', 'a b'])
def test_bad_label_selector(selector):
    with pytest.raises(selectors.SelectorError):
        selectors.label_selector(selector)


def test_bad_field_selector():
    with pytest.raises(selectors.SelectorError):
        selectors.field_selector('metadata.name')
