"""Patch semantics of the Kubernetes API: JSON merge patch, strategic merge patch, JSON patch.

The strategic merge patch knows the merge keys of the built-in types by field name
(the real server reads them from the Go structs); lists without a merge key are replaced.
"""
import copy
from typing import Any

import jsonpatch

# Field name -> patchMergeKey, as declared in k8s.io/api for the fields the project's objects use.
MERGE_KEYS = {
    'containers': 'name',
    'initContainers': 'name',
    'ephemeralContainers': 'name',
    'volumes': 'name',
    'env': 'name',
    'volumeMounts': 'mountPath',
    'volumeDevices': 'devicePath',
    'imagePullSecrets': 'name',
    'conditions': 'type',
    'ownerReferences': 'uid',
    'hostAliases': 'ip',
}
# Lists of scalars with patchStrategy=merge: the patch adds to them instead of replacing them.
PRIMITIVE_MERGE_LISTS = {'finalizers'}


class PatchError(ValueError):
    """The patch cannot be applied to the object (the server answers 422)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 JSON patch (a list of add/remove/replace/move/copy/test operations)."""
    if not isinstance(operations, list):
        raise PatchError('a JSON patch must be a list of operations')
    try:
        return jsonpatch.apply_patch(target, operations)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, TypeError) as exc:
        raise PatchError(f'the JSON patch cannot be applied: {exc}') from exc


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == 'ports':
        # Container ports merge by containerPort, Service ports by port (as k8s.io/api declares).
        return 'containerPort' if any(isinstance(i, dict) and 'containerPort' in i for i in items) else 'port'
    return MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any) -> Any:
    """Kubernetes strategic merge patch, including the $patch, $setElementOrder and $deleteFromPrimitiveList directives."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get('$patch') == 'replace':
        return strategic_merge({}, {k: v for k, v in patch.items() if k != '$patch'})
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith('$'):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            current = result.get(key)
            result[key] = _merge_list(key, current if isinstance(current, list) else [], value)
        elif isinstance(value, dict) and value.get('$patch') == 'delete':
            result.pop(key, None)
        else:
            result[key] = strategic_merge(result.get(key), value)
    for key, value in patch.items():
        if key.startswith('$deleteFromPrimitiveList/'):
            field = key.split('/', 1)[1]
            result[field] = [item for item in result.get(field, []) if item not in value]
        elif key.startswith('$setElementOrder/'):
            field = key.split('/', 1)[1]
            if isinstance(result.get(field), list):
                result[field] = _reorder(field, result[field], value)
    return result


def _merge_list(field: str, current: list[Any], patch: list[Any]) -> list[Any]:
    key = _merge_key(field, current + patch)
    if key is None:
        if field in PRIMITIVE_MERGE_LISTS:
            return current + [item for item in patch if item not in current]
        return [strategic_merge({}, item) if isinstance(item, dict) else copy.deepcopy(item) for item in patch]
    if any(isinstance(item, dict) and item.get('$patch') == 'replace' for item in patch):
        return [strategic_merge({}, item) for item in patch if item.get('$patch') != 'replace']
    result = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f'{field}: every item of a strategic merge patch needs the merge key {key!r}')
        index = next((i for i, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item[key]), None)
        if item.get('$patch') == 'delete':
            if index is not None:
                del result[index]
        elif index is None:
            result.append(strategic_merge({}, item))
        else:
            result[index] = strategic_merge(result[index], item)
    return result


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = _merge_key(field, items)

    def identity(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, dict) else item

    wanted = [identity(item) for item in order]
    ranked = sorted(items, key=lambda item: wanted.index(identity(item)) if identity(item) in wanted else len(wanted))
    return ranked
