"""Label and field selectors as the list and watch endpoints take them (?labelSelector=, ?fieldSelector=)."""
import re
from collections.abc import Callable
from typing import Any

Predicate = Callable[[dict[str, Any]], bool]

_LABEL_TERM = re.compile(
    r'^(?P<neg>!)?(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)'
    r'(?:(?P<op>==|=|!=)(?P<value>[-A-Za-z0-9_.]*)|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?$'
)
_FIELD_TERM = re.compile(r'^(?P<key>[A-Za-z][A-Za-z0-9.]*)(?P<op>==|=|!=)(?P<value>[^,]*)$')


class SelectorError(ValueError):
    """The selector does not parse (the server answers 400)."""


def _split(text: str) -> list[str]:
    """Split on the commas that are not inside an `in (...)` value list."""
    terms, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {'(': 1, ')': -1}.get(char, 0)
        if char == ',' and depth == 0:
            terms.append(text[start:index].strip())
            start = index + 1
    terms.append(text[start:].strip())
    return [term for term in terms if term]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    match = _LABEL_TERM.match(term)
    if match is None or (match['neg'] and (match['op'] or match['setop'])):
        raise SelectorError(f'unable to parse requirement: {term!r}')
    key = match['key']
    if match['neg']:
        return lambda labels: key not in labels
    if match['op'] in ('=', '=='):
        return lambda labels: labels.get(key) == match['value']
    if match['op'] == '!=':
        return lambda labels: labels.get(key) != match['value']
    if match['setop']:
        values = {value.strip() for value in match['values'].split(',') if value.strip()}
        if match['setop'] == 'in':
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def label_selector(text: str) -> Predicate:
    terms = [_label_term(term) for term in _split(text)]
    return lambda obj: all(term((obj.get('metadata') or {}).get('labels') or {}) for term in terms)


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split('.'):
        value = value.get(part) if isinstance(value, dict) else None
    return '' if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def field_selector(text: str) -> Predicate:
    terms = []
    for term in _split(text):
        match = _FIELD_TERM.match(term)
        if match is None:
            raise SelectorError(f'invalid field selector: {term!r}')
        terms.append((match['key'], match['op'] != '!=', match['value']))
    return lambda obj: all((_field_value(obj, key) == value) == equal for key, equal, value in terms)
