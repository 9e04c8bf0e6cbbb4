"""The Kubernetes API stand-in: kmock's KubernetesEmulator plus the API semantics that real clients rely on.

kmock provides the HTTP server, request parsing, discovery documents, the versioned object store
(``api.objects``) and the error rendering. This layer takes over the resource endpoints
(``/api/v1/...`` and ``/apis/<group>/<version>/...``) because kmock 0.8 mis-parses namespace URLs,
has no PUT, no selectors, no metadata bookkeeping, no status subresource and no CRDs.

Simplifications (it is test infrastructure): no admission, no schema validation or pruning of
custom resources, no garbage collection by ownerReferences, no controllers (nothing creates pods),
server-side apply merges the applied configuration without tracking field managers, and a
deleted namespace disappears at once together with its objects.

Faults (error answers, stalls, answers of another kind) are injected only on request: ``StandinAPI.inject()``, or the
``kube_faults`` pytest fixture that also removes them after the test.
"""
import asyncio
import collections
import copy
import dataclasses
import datetime
import json
import random
import re
import string
import threading
import uuid
from typing import Any

import aiohttp.web
import attrs
import kmock
import yaml
from kmock._internal import parsing  # private, but the only way to fix its URL parsing: see _tolerant_parse_path

from tests.standin import patching, selectors

ALL_VERBS = ('create', 'delete', 'get', 'list', 'patch', 'update', 'watch')
# (group/version, plural, kind, namespaced, subresources, short names)
BUILTIN_RESOURCES = (
    ('v1', 'namespaces', 'Namespace', False, ('status',), ('ns',)),
    ('v1', 'nodes', 'Node', False, ('status',), ('no',)),
    ('v1', 'pods', 'Pod', True, ('status', 'log', 'eviction'), ('po',)),
    ('v1', 'services', 'Service', True, ('status',), ('svc',)),
    ('v1', 'configmaps', 'ConfigMap', True, (), ('cm',)),
    ('v1', 'secrets', 'Secret', True, (), ()),
    ('v1', 'serviceaccounts', 'ServiceAccount', True, (), ('sa',)),
    ('v1', 'events', 'Event', True, (), ('ev',)),
    ('apps/v1', 'daemonsets', 'DaemonSet', True, ('status',), ('ds',)),
    ('apps/v1', 'deployments', 'Deployment', True, ('status',), ('deploy',)),
    ('rbac.authorization.k8s.io/v1', 'roles', 'Role', True, (), ()),
    ('rbac.authorization.k8s.io/v1', 'rolebindings', 'RoleBinding', True, (), ()),
    ('rbac.authorization.k8s.io/v1', 'clusterroles', 'ClusterRole', False, (), ()),
    ('rbac.authorization.k8s.io/v1', 'clusterrolebindings', 'ClusterRoleBinding', False, (), ()),
    ('node.k8s.io/v1', 'runtimeclasses', 'RuntimeClass', False, (), ()),
    ('apiextensions.k8s.io/v1', 'customresourcedefinitions', 'CustomResourceDefinition', False, ('status',), ('crd', 'crds')),
)
BUILTIN_NAMESPACES = ('default', 'kube-system', 'kube-public', 'kube-node-lease')
CRD_RESOURCE = kmock.resource('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')
NAMESPACE_RESOURCE = kmock.resource('', 'v1', 'namespaces')
NODE_RESOURCE = kmock.resource('', 'v1', 'nodes')
DEFAULT_WATCH_SECONDS = 1800  # the real apiserver's --min-request-timeout
EVENT_LOG_SIZE = 10000  # watches resuming from an older resourceVersion get 410 Gone, as from etcd compaction
_DNS_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
_NAMESPACE_SUBRESOURCES = ('status', 'finalize')
_SUBRESOURCE_VERBS = {'log': ['get'], 'eviction': ['create']}  # the others: get, patch, update
_SERVER_OWNED_METADATA = ('uid', 'creationTimestamp', 'deletionTimestamp', 'generation', 'namespace', 'name')


def api_error(code: int, reason: str, message: str, **details: Any) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=code, reason=reason, message=message, details=details or None)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def _group_version(res: kmock.resource) -> str:
    return f'{res.group}/{res.version}' if res.group else res.version


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What a generation counts: everything but metadata and status (spec, data, rules, ...)."""
    return {key: value for key, value in obj.items() if key not in ('metadata', 'status', 'apiVersion', 'kind')}


@dataclasses.dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""
    resource: kmock.resource
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_target(path: str) -> Target | None:
    """Parse /api/v1/... and /apis/G/V/... resource URLs; None for discovery and other paths."""
    parts = [part for part in path.split('/') if part]
    if len(parts) >= 3 and parts[0] == 'api':
        group, version, rest = '', parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == 'apis':
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == 'namespaces' and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise api_error(404, 'NotFound', f'the server could not find the requested resource: {path}')
    plural, name, subresource = (rest + [None, None])[:3]
    return Target(kmock.resource(group, version, plural), namespace, name, subresource)


_kmock_parse_path = parsing.parse_path


def _tolerant_parse_path(path: str) -> parsing.ParsedPath:
    """kmock 0.8 fails to parse /api/v1/namespaces[/NAME] (an unpacking error, a 500 for every namespace call).

    Its parse runs before any handler can intervene, so the parser itself is wrapped; the stand-in
    reads the URLs with parse_target() anyway, this only keeps kmock's request bookkeeping alive.
    """
    try:
        return _kmock_parse_path(path)
    except ValueError:
        target = parse_target(path)
        if target is None:
            raise
        res = target.resource
        return parsing.ParsedPath(res.group, res.version, res.plural, target.namespace, target.name, target.subresource)


parsing.parse_path = _tolerant_parse_path


# The reason an apiserver gives with each status (k8s.io/apimachinery metav1.StatusReason).
FAULT_REASONS = {400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 410: 'Expired',
                 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 502: 'BadGateway', 503: 'ServiceUnavailable',
                 504: 'Timeout'}
_WRITE_VERBS = {'POST': 'create', 'PUT': 'update', 'PATCH': 'patch', 'DELETE': 'delete'}  # the RBAC verb of each write method


@dataclasses.dataclass
class Fault:
    """An answer the stand-in gives instead of serving a request: a stall, an error Status, or a stall and then one;
    or an answer as a proxy in front of an apiserver may give it: `text` with `content_type`, status 200 by default.

    Matches requests whose HTTP method is `method` ('*': any) and whose URL path matches `path` in
    full, `times` times; then it is spent and the requests are served again. `seen` counts every
    matching request (also those after it is spent), `injected` the faulty answers given.
    """
    method: str
    path: re.Pattern[str]
    status: int | None = None
    delay: float = 0.0  # seconds to stall before answering (with `status`, or else by serving the request)
    times: int = 1
    retry_after: int | None = None
    message: str | None = None
    text: str | None = None
    content_type: str = 'application/json'
    seen: int = 0
    injected: int = 0

    def matches(self, method: str, path: str) -> bool:
        return self.method in ('*', method) and self.path.fullmatch(path) is not None

    def body(self, method: str, path: str, query: Any) -> dict[str, Any]:
        """A v1 Status worded as the apiserver words it (for 403, the authorizer's sentence: verb, resource, group)."""
        try:
            target = parse_target(path)
        except kmock.KubernetesError:
            target = None
        message = self.message
        if message is None and target is not None and self.status == 403:
            res = target.resource
            verb = _WRITE_VERBS.get(method) or ('watch' if query.get('watch') in ('true', '1') else 'get' if target.name else 'list')
            resource = res.plural + (f'/{target.subresource}' if target.subresource else '')
            scope = f'in the namespace "{target.namespace}"' if target.namespace else 'at the cluster scope'
            subject = f'{res.plural} "{target.name}"' if target.name else res.plural
            message = (f'{subject} is forbidden: User "system:serviceaccount:gpuops:standin" '
                       f'cannot {verb} resource "{resource}" in API group "{res.group}" {scope}')
        elif message is None and target is not None and self.status == 409:
            message = (f'Operation cannot be fulfilled on {target.resource.plural} "{target.name}": the object has been modified; '
                       'please apply your changes to the latest version and try again')
        status = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'code': self.status,
                  'reason': FAULT_REASONS.get(self.status, 'Unknown'), 'message': message or f'injected fault ({self.status})'}
        if target is not None and target.name:
            status['details'] = {'name': target.name, 'group': target.resource.group, 'kind': target.resource.plural}
        return status


@dataclasses.dataclass(frozen=True)
class Event:
    revision: int
    store: kmock.resource
    type: str
    object: dict[str, Any]


@attrs.define(kw_only=True)
class StandinAPI(kmock.KubernetesEmulator):
    """An in-memory Kubernetes API server for tests; run it with ``kmock.Server(api)``."""
    revision: int = attrs.field(default=0, init=False)
    events: collections.deque[Event] = attrs.field(factory=lambda: collections.deque(maxlen=EVENT_LOG_SIZE), init=False)
    pod_logs: dict[tuple[str, str], str] = attrs.field(factory=dict, init=False)  # (namespace, pod) -> text of pods/log
    _changed: asyncio.Condition = attrs.field(factory=asyncio.Condition, init=False)
    _closing: bool = attrs.field(default=False, init=False)
    _storage: dict[kmock.resource, kmock.resource] = attrs.field(factory=dict, init=False)  # served -> stored version
    faults: list[Fault] = attrs.field(factory=list, init=False)  # none unless a test injects them
    _faults_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)  # tests inject from another thread

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for group_version, plural, kind, namespaced, subresources, shortnames in BUILTIN_RESOURCES:
            self._register(kmock.resource(group_version, plural), kind, namespaced, subresources, shortnames)
        for name in BUILTIN_NAMESPACES:
            self.seed(NAMESPACE_RESOURCE, {'metadata': {'name': name}, 'status': {'phase': 'Active'}})

    # ---- registry -------------------------------------------------------------------------------

    def _register(self, res: kmock.resource, kind: str, namespaced: bool, subresources: Any = (), shortnames: Any = (),
                  categories: Any = (), singular: str | None = None, storage: kmock.resource | None = None) -> None:
        self.resources[res] = kmock.ResourceInfo(
            kind=kind, namespaced=namespaced, singular=singular or kind.lower(), verbs=ALL_VERBS,
            shortnames=shortnames, categories=categories, subresources=subresources,
        )
        self._storage[res] = storage or res

    def _resolve(self, target: Target) -> tuple[kmock.ResourceInfo, kmock.resource]:
        if target.resource not in self.resources:
            raise api_error(404, 'NotFound', f'the server could not find the requested resource ({target.resource.plural})')
        info = self.resources[target.resource]
        misplaced = (target.namespace is not None and not info.namespaced) or (target.subresource and target.subresource not in info.subresources)
        if misplaced:
            raise api_error(404, 'NotFound', 'the server could not find the requested resource')
        return info, self._storage[target.resource]

    def _get_resources(self) -> list[kmock.resource]:
        # Only what is registered: kmock would also list the resources of deleted objects (of a deleted CRD).
        return list(self.resources)

    async def _serve_version(self, request: kmock.Request) -> dict[str, Any]:
        # kmock 0.8 gives core v1 the groupVersion "/v1" and its subresources the verbs and short names
        # of the main resource, which makes kubectl's short names ambiguous.
        group, version = request.resource.group, request.resource.version
        found = sorted((res for res in self.resources if res.group == group and res.version == version), key=lambda res: res.plural)
        if not found:
            raise api_error(404, 'NotFound', f'the server could not find the requested resource ({group}/{version})')
        entries = []
        for res in found:
            info = self.resources[res]
            common = {'kind': info.kind, 'namespaced': bool(info.namespaced)}
            entries.append(dict(common, name=res.plural, singularName=info.singular, verbs=sorted(info.verbs),
                                shortNames=sorted(info.shortnames), categories=sorted(info.categories)))
            entries += [dict(common, name=f'{res.plural}/{sub}', singularName='', verbs=_SUBRESOURCE_VERBS.get(sub, ['get', 'patch', 'update']))
                        for sub in sorted(info.subresources)]
        return {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': _group_version(found[0]), 'resources': entries}

    async def _serve_server_version(self, request: kmock.Request) -> dict[str, Any]:
        # kmock reports a k3s v1.26, which kubectl 1.37 warns about as an unsupported version skew.
        return {'major': '1', 'minor': '37', 'gitVersion': 'v1.37.0-gpuops-standin', 'gitTreeState': 'clean',
                'gitCommit': 'none', 'buildDate': '1970-01-01T00:00:00Z', 'goVersion': f'n/a (kmock {kmock.__version__})',
                'compiler': 'n/a', 'platform': 'linux/amd64'}

    def _openapi(self, group_version_path: str) -> dict[str, Any]:
        """Just enough OpenAPI v3 for kubectl to see that the server validates fields itself (?fieldValidation=).

        Without it kubectl apply refuses to run ("failed to download openapi") unless --validate=false.
        """
        def path_of(res: kmock.resource) -> str:
            return f'apis/{res.group}/{res.version}' if res.group else f'api/{res.version}'

        if not group_version_path:
            paths = sorted({path_of(res) for res in self.resources})
            return {'paths': {path: {'serverRelativeURL': f'/openapi/v3/{path}?hash={self.revision}'} for path in paths}}
        found = [res for res in self.resources if path_of(res) == group_version_path]
        if not found:
            raise api_error(404, 'NotFound', f'no OpenAPI document for {group_version_path}')
        paths = {}
        for res in found:
            info = self.resources[res]
            scope = 'namespaces/{namespace}/' if info.namespaced else ''
            paths[f'/{path_of(res)}/{scope}{res.plural}/{{name}}'] = {'patch': {
                'x-kubernetes-group-version-kind': {'group': res.group, 'version': res.version, 'kind': info.kind},
                'parameters': [{'name': 'fieldValidation', 'in': 'query', 'schema': {'type': 'string'}}],
                'responses': {},
            }}
        return {'openapi': '3.0.0', 'info': {'title': 'Kubernetes API stand-in', 'version': 'v1'}, 'paths': paths}

    # ---- store ----------------------------------------------------------------------------------

    def _load(self, store: kmock.resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (store, namespace, name)
        if key not in self.objects or self.objects[key].deleted:
            return None
        return copy.deepcopy(self.objects[key].raw)

    def _save(self, store: kmock.resource, obj: dict[str, Any], event_type: str) -> dict[str, Any]:
        """Store a new version (or the deletion) of an object under a new resourceVersion and log the event."""
        self.revision += 1
        meta = obj['metadata']
        meta['resourceVersion'] = str(self.revision)
        key = (store, meta.get('namespace'), meta['name'])
        if event_type == 'DELETED':
            self.objects[key].delete()
        elif key in self.objects:
            self.objects[key].create(obj)  # appends a version to kmock's history of this object
        else:
            self.objects[key] = obj
        self.events.append(Event(self.revision, store, event_type, copy.deepcopy(obj)))
        if store == CRD_RESOURCE:
            self._crd_changed(obj, deleted=event_type == 'DELETED')
        return obj

    def _stored(self, store: kmock.resource, namespace: str | None = None) -> list[dict[str, Any]]:
        found = [
            copy.deepcopy(obj.raw) for (res, ns, _name), obj in self.objects.items()
            if res == store and not obj.deleted and (namespace is None or ns == namespace)
        ]
        return sorted(found, key=lambda obj: (obj['metadata'].get('namespace') or '', obj['metadata']['name']))

    def seed(self, res: kmock.resource, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object as the system would (a kubelet registering its node): status included, no checks."""
        info = self.resources[res]
        obj = copy.deepcopy(obj)
        obj.update(apiVersion=_group_version(res), kind=info.kind)
        obj['metadata'].update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        return self._save(self._storage[res], obj, 'ADDED')

    def add_node(self, name: str) -> dict[str, Any]:
        """Register a Node the way a kubelet does: well-known labels and a Ready condition; no invented capacity."""
        now = _now()
        return self.seed(NODE_RESOURCE, {
            'metadata': {'name': name, 'labels': {
                'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64',
            }},
            'spec': {},
            'status': {
                'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'KubeletReady', 'message': 'kubelet is posting ready status',
                                'lastHeartbeatTime': now, 'lastTransitionTime': now}],
                'addresses': [{'type': 'Hostname', 'address': name}],
                # No nodeInfo: the schema requires all of its fields (kubelet and kernel
                # versions, machine ID, ...), which the stand-in would have to invent.
            },
        })

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def close_watches(self) -> None:
        """End the open watch streams so that the server can shut down without waiting for their timeouts."""
        self._closing = True
        await self._notify()

    # ---- fault injection ------------------------------------------------------------------------

    def inject(self, method: str, path: str, status: int | None = None, delay: float = 0.0, times: int = 1,
               retry_after: int | None = None, message: str | None = None, text: str | None = None,
               content_type: str = 'application/json') -> Fault:
        """Answer the next `times` requests of `method` ('*': any) on a URL path matching `path` with a fault.

        `status`: an error Status with that code (a Retry-After header when `retry_after` is given);
        `delay`: stall that many seconds first (without `status`, the request is then served: a slow
        server); `text`: answer with that body and `content_type` instead (status 200 unless given).
        Faults are tried in the order injected; each request meets at most one. Thread-safe.
        """
        if status is None and not delay and text is None:
            raise ValueError('a fault needs a status, a delay, a text or some of them')
        if status is not None and not (200 if text is not None else 400) <= status <= 599:
            raise ValueError(f'a fault status is an HTTP error code (400-599; 200-599 with a text), not {status}')
        if times < 1:
            raise ValueError(f'times must be 1 or more, not {times}')
        if text is not None and status is None:
            status = 200
        fault = Fault(method.upper(), re.compile(path), status, delay, times, retry_after, message, text, content_type)
        with self._faults_lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._faults_lock:
            self.faults.clear()

    def _take_fault(self, method: str, path: str) -> Fault | None:
        """The fault that answers this request, if any; counts it."""
        with self._faults_lock:
            answering = None
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.seen += 1
                    if answering is None and fault.injected < fault.times:
                        fault.injected += 1
                        answering = fault
            return answering

    async def _faulty_answer(self, fault: Fault, request: kmock.Request) -> aiohttp.web.StreamResponse | None:
        """Stall, then the fault's Status; None when the request is to be served after the stall."""
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.status is None:
            return None
        headers = {'Retry-After': str(fault.retry_after)} if fault.retry_after is not None else None
        if fault.text is not None:
            return aiohttp.web.Response(text=fault.text, status=fault.status, content_type=fault.content_type, headers=headers)
        return aiohttp.web.json_response(fault.body(request.method.value, request.url.path, request.params),
                                         status=fault.status, headers=headers)

    # ---- HTTP -----------------------------------------------------------------------------------

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        fault = self._take_fault(request.method.value, request.url.path)
        if fault is not None:
            answer = await self._faulty_answer(fault, request)
            if answer is not None:
                return answer
        target = parse_target(request.url.path)
        if target is None:
            if request.method.value not in ('GET', 'HEAD'):
                raise api_error(405, 'MethodNotAllowed', f'{request.method.value} is not supported on {request.url.path}')
            if request.url.path.rstrip('/') == '/version':  # the Python client asks for /version/
                return aiohttp.web.json_response(await self._serve_server_version(request))
            if request.url.path.startswith('/openapi/v3'):
                return aiohttp.web.json_response(self._openapi(request.url.path.removeprefix('/openapi/v3').strip('/')))
            return await super()._handle(request)
        info, store = self._resolve(target)
        method = request.method.value
        params = request.params
        if method == 'GET' and params.get('watch', '').lower() in ('true', '1'):
            return await self._watch(request, target, store)
        if method == 'GET' and target.subresource == 'log':
            return self._log(target, store)
        if target.subresource == 'eviction':
            if method != 'POST':
                raise api_error(405, 'MethodNotAllowed', f'{method} is not supported on pods/eviction')
            return await self._evict(target, info, store, self._body(request))
        if target.name is None:
            if method == 'GET':
                return aiohttp.web.json_response(self._list(target, info, store, params))
            if method != 'POST':
                raise api_error(405, 'MethodNotAllowed', f'{method} is not supported on a collection')
        elif method not in ('GET', 'PUT', 'PATCH', 'DELETE'):
            raise api_error(405, 'MethodNotAllowed', f'{method} is not supported on an object')
        if target.namespace is None and info.namespaced and method != 'GET':
            raise api_error(404, 'NotFound', 'the server could not find the requested resource (no namespace in the URL)')
        commit = 'All' not in request.url.query.getall('dryRun', [])
        if method == 'GET':
            obj, code = self._existing(target, info, store), 200
        elif method == 'POST':
            obj, code = self._create(target, info, store, self._body(request), commit), 201
        elif method == 'PUT':
            obj, code = self._update(target, info, store, self._body(request), commit), 200
        elif method == 'PATCH':
            obj, code = self._patch(request, target, info, store, commit)
        else:
            obj, code = self._delete(target, info, store, self._body(request, default={}), commit), 200
        if commit and method != 'GET':
            await self._notify()
        return aiohttp.web.json_response(self._present(obj, target.resource), status=code)

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        # A clean v1 Status (kmock puts a traceback into the details and free text into the reason).
        if isinstance(exc, kmock.KubernetesNotFoundError):
            code, reason, message, details = 404, 'NotFound', exc.message, exc.details
        elif isinstance(exc, kmock.KubernetesError):
            code, reason, message, details = exc.status, exc.reason, exc.message, exc.details
        else:
            code, reason, message, details = 500, 'InternalError', f'{type(exc).__name__}: {exc}', None
        status = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message, 'reason': reason, 'code': code}
        if details:
            status['details'] = details
        return aiohttp.web.json_response(status, status=code)

    @staticmethod
    def _body(request: kmock.Request, default: Any = None) -> Any:
        if not request.body:
            if default is not None:
                return default
            raise api_error(400, 'BadRequest', 'the request has no body')
        try:
            if request.headers.get('Content-Type', '').startswith('application/apply-patch+yaml'):
                return yaml.safe_load(request.body)
            return json.loads(request.body)
        except (ValueError, yaml.YAMLError) as exc:
            raise api_error(400, 'BadRequest', f'the body does not parse: {exc}') from exc

    def _present(self, obj: dict[str, Any], res: kmock.resource) -> dict[str, Any]:
        """Show a stored object in the API version it was asked for (custom resources may have several)."""
        return dict(obj, apiVersion=_group_version(res))

    def _existing(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource) -> dict[str, Any]:
        obj = self._load(store, target.namespace, target.name)
        if obj is None:
            raise api_error(404, 'NotFound', f'{target.resource.plural} "{target.name}" not found',
                            name=target.name, group=target.resource.group, kind=target.resource.plural)
        return obj

    # ---- reading --------------------------------------------------------------------------------

    @staticmethod
    def _selector(params: Any) -> selectors.Predicate:
        try:
            labels = selectors.label_selector(params.get('labelSelector', ''))
            fields = selectors.field_selector(params.get('fieldSelector', ''))
        except selectors.SelectorError as exc:
            raise api_error(400, 'BadRequest', str(exc)) from exc
        return lambda obj: labels(obj) and fields(obj)

    def _list(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource, params: Any) -> dict[str, Any]:
        matches = self._selector(params)
        items = [self._present(obj, target.resource) for obj in self._stored(store, target.namespace) if matches(obj)]
        return {
            'apiVersion': _group_version(target.resource), 'kind': f'{info.kind}List',
            'metadata': {'resourceVersion': str(self.revision)}, 'items': items,
        }

    def _log(self, target: Target, store: kmock.resource) -> aiohttp.web.Response:
        self._existing(target, self.resources[target.resource], store)
        return aiohttp.web.Response(text=self.pod_logs.get((target.namespace, target.name), ''), content_type='text/plain')

    async def _watch(self, request: kmock.Request, target: Target, store: kmock.resource) -> aiohttp.web.StreamResponse:
        matches = self._selector(request.params)
        timeout = float(request.params.get('timeoutSeconds') or DEFAULT_WATCH_SECONDS)
        since = request.params.get('resourceVersion') or '0'

        def wanted(event: Event) -> bool:
            meta = event.object['metadata']
            return (event.store == store and (target.namespace is None or meta.get('namespace') == target.namespace)
                    and (target.name is None or meta['name'] == target.name) and matches(event.object))

        oldest = self.events[0].revision if self.events else self.revision + 1
        if not since.isdigit() or (since != '0' and int(since) < oldest - 1):
            raise api_error(410, 'Expired', f'too old resource version: {since}')
        response = aiohttp.web.StreamResponse(headers={'Content-Type': 'application/json'})
        await response.prepare(request._raw_request)  # pylint: disable=protected-access

        async def send(event_type: str, obj: dict[str, Any]) -> None:
            line = json.dumps({'type': event_type, 'object': self._present(obj, target.resource)})
            await response.write(line.encode() + b'\n')

        # Without a resourceVersion a watch starts with the current state as synthetic ADDED events.
        seen = int(since) if since != '0' else self.revision
        if since == '0':
            for obj in self._stored(store, target.namespace):
                if (target.name is None or obj['metadata']['name'] == target.name) and matches(obj):
                    await send('ADDED', obj)
        try:
            async with asyncio.timeout(timeout):
                while not self._closing:
                    for event in [event for event in self.events if event.revision > seen]:
                        seen = event.revision
                        if wanted(event):
                            await send(event.type, event.object)
                    async with self._changed:
                        await self._changed.wait_for(lambda: self._closing or self.revision > seen)
        except (TimeoutError, ConnectionResetError):
            pass  # the watch ran its timeoutSeconds or the client went away: end the stream normally
        await response.write_eof()
        return response

    # ---- writing --------------------------------------------------------------------------------

    def _checked(self, body: Any, target: Target, info: kmock.ResourceInfo) -> dict[str, Any]:
        """Validate an object sent for create/replace/apply and fill in kind, apiVersion and namespace."""
        if not isinstance(body, dict) or not isinstance(body.get('metadata', {}), dict):
            raise api_error(400, 'BadRequest', 'the object must be a JSON object with a metadata object')
        obj = copy.deepcopy(body)
        if obj.setdefault('kind', info.kind) != info.kind or obj.setdefault('apiVersion', _group_version(target.resource)) != _group_version(target.resource):
            raise api_error(400, 'BadRequest', f'the object is a {obj["apiVersion"]} {obj["kind"]}, the URL expects '
                            f'{_group_version(target.resource)} {info.kind}')
        meta = obj.setdefault('metadata', {})
        if info.namespaced:
            if meta.setdefault('namespace', target.namespace) != target.namespace:
                raise api_error(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request')
        elif meta.pop('namespace', None):
            raise api_error(400, 'BadRequest', f'{info.kind} is cluster-scoped; metadata.namespace must not be set')
        if not meta.get('name') and meta.get('generateName') and target.name is None:
            meta['name'] = meta['generateName'] + ''.join(random.choices(string.ascii_lowercase + string.digits, k=5))
        causes = self._invalid_fields(obj, info)
        if target.name is not None and meta.get('name') not in (None, target.name):
            causes.append({'field': 'metadata.name', 'message': f'the name in the body does not match the URL ({target.name})'})
        meta.setdefault('name', target.name)
        if causes:
            raise api_error(422, 'Invalid', f'{info.kind} "{meta.get("name")}" is invalid: '
                            + '; '.join(f'{c["field"]}: {c["message"]}' for c in causes),
                            name=meta.get('name'), kind=info.kind, causes=causes)
        return obj

    @staticmethod
    def _invalid_fields(obj: dict[str, Any], info: kmock.ResourceInfo) -> list[dict[str, str]]:
        meta = obj['metadata']
        name = meta.get('name')
        pattern = _DNS_LABEL if info.kind == 'Namespace' else _DNS_SUBDOMAIN
        causes = []
        if name is not None and (not isinstance(name, str) or not pattern.match(name) or len(name) > 253):
            causes.append({'field': 'metadata.name', 'message': f'Invalid value: {name!r}: must be a lowercase RFC 1123 name'})
        for field in ('labels', 'annotations'):
            values = meta.get(field) or {}
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                causes.append({'field': f'metadata.{field}', 'message': 'must be a map of string keys to string values'})
        if info.kind == 'CustomResourceDefinition':
            causes += _crd_problems(obj)
        return causes

    def _create(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource, body: Any, commit: bool) -> dict[str, Any]:
        obj = self._checked(body, target, info)
        meta = obj['metadata']
        if not meta.get('name'):
            raise api_error(422, 'Invalid', f'{info.kind} is invalid: metadata.name: Required value', kind=info.kind,
                            causes=[{'field': 'metadata.name', 'message': 'Required value'}])
        if info.namespaced and self._load(self._storage[NAMESPACE_RESOURCE], None, meta['namespace']) is None:
            raise api_error(404, 'NotFound', f'namespaces "{meta["namespace"]}" not found', name=meta['namespace'], kind='namespaces')
        if self._load(store, meta.get('namespace'), meta['name']) is not None:
            raise api_error(409, 'AlreadyExists', f'{target.resource.plural} "{meta["name"]}" already exists',
                            name=meta['name'], group=target.resource.group, kind=target.resource.plural)
        for field in ('resourceVersion', 'deletionTimestamp', 'managedFields', 'selfLink'):
            meta.pop(field, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        if obj['kind'] in SPEC_STRUCT_KINDS:
            obj.setdefault('spec', {})  # a struct, never null: the real API server returns spec: {} (k8s_drain relies on it)
        if 'status' in info.subresources:
            obj['status'] = _initial_status(obj)  # a create does not set the status of a resource with a /status subresource
            if obj['status'] is None:
                del obj['status']
        return self._save(store, obj, 'ADDED') if commit else obj

    def _update(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource, body: Any, commit: bool) -> dict[str, Any]:
        return self._commit_update(target, info, store, self._existing(target, info, store), self._checked(body, target, info), commit)

    def _commit_update(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource,
                       old: dict[str, Any], new: dict[str, Any], commit: bool) -> dict[str, Any]:
        """Turn a desired object into the next stored version: preconditions, server-owned fields, status, generation."""
        wanted_version = (new.get('metadata') or {}).get('resourceVersion')
        if wanted_version and wanted_version != old['metadata']['resourceVersion']:
            raise api_error(409, 'Conflict', f'Operation cannot be fulfilled on {target.resource.plural} "{target.name}": the object has been modified; '
                            'please apply your changes to the latest version and try again',
                            name=target.name, group=target.resource.group, kind=target.resource.plural)
        if target.subresource == 'status':
            new = dict(copy.deepcopy(old), status=new.get('status'))  # /status changes the status only
        elif 'status' in info.subresources:
            new['status'] = old.get('status')  # the main endpoint ignores the status
        if new.get('status') is None:
            new.pop('status', None)
        meta = new.setdefault('metadata', {})
        for field in _SERVER_OWNED_METADATA + ('resourceVersion',):
            if field in old['metadata']:
                meta[field] = old['metadata'][field]
            else:
                meta.pop(field, None)
        new.update(apiVersion=old['apiVersion'], kind=old['kind'])
        causes = self._invalid_fields(new, info)
        if causes:
            raise api_error(422, 'Invalid', '; '.join(f'{c["field"]}: {c["message"]}' for c in causes), causes=causes)
        if new == old:
            return old  # a no-op write keeps the resourceVersion and sends no event
        if _content(new) != _content(old):
            meta['generation'] = old['metadata'].get('generation', 1) + 1
        if not commit:
            return new
        if meta.get('deletionTimestamp') and not meta.get('finalizers'):
            return self._remove(store, new)  # the last finalizer is gone: the pending deletion completes
        return self._save(store, new, 'MODIFIED')

    def _patch(self, request: kmock.Request, target: Target, info: kmock.ResourceInfo, store: kmock.resource,
               commit: bool) -> tuple[dict[str, Any], int]:
        content_type = request.headers.get('Content-Type', '').split(';')[0].strip()
        patch = self._body(request)
        custom = target.resource not in (kmock.resource(gv, plural) for gv, plural, *_rest in BUILTIN_RESOURCES)
        old = self._load(store, target.namespace, target.name)
        if content_type == 'application/apply-patch+yaml':
            if old is None:  # server-side apply creates what does not exist yet
                return self._create(dataclasses.replace(target, name=None), info, store, self._checked(patch, target, info), commit), 201
            patch = self._checked(patch, target, info)
            apply = patching.merge_patch if custom else patching.strategic_merge
        elif content_type == 'application/merge-patch+json':
            apply = patching.merge_patch
        elif content_type == 'application/json-patch+json':
            apply = patching.json_patch
        elif content_type == 'application/strategic-merge-patch+json' and not custom:
            apply = patching.strategic_merge
        else:
            raise api_error(415, 'UnsupportedMediaType', f'the body of the request was in an unknown format - accepted media types include: '
                            f'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'
                            f'{"" if custom else ", application/strategic-merge-patch+json"}')
        if old is None:
            self._existing(target, info, store)  # raises the 404
        if content_type != 'application/json-patch+json' and not isinstance(patch, dict):
            raise api_error(400, 'BadRequest', 'a merge patch must be a JSON object')
        try:
            new = apply(old, patch)
        except patching.PatchError as exc:
            raise api_error(422, 'Invalid', str(exc)) from exc
        if not isinstance(new, dict) or not isinstance(new.get('metadata'), dict):
            raise api_error(422, 'Invalid', 'the patched object has no metadata')
        return self._commit_update(target, info, store, old, new, commit), 200

    def _delete(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource, options: Any, commit: bool) -> dict[str, Any]:
        if target.name is None or target.subresource:
            raise api_error(405, 'MethodNotAllowed', 'DELETE is supported on objects only')
        obj = self._existing(target, info, store)
        preconditions = (options or {}).get('preconditions') or {}
        for field in ('uid', 'resourceVersion'):
            if preconditions.get(field) and preconditions[field] != obj['metadata'].get(field):
                raise api_error(409, 'Conflict', f'Precondition failed: {field} in precondition: {preconditions[field]}, '
                                f'{field} in object meta: {obj["metadata"].get(field)}', name=target.name, kind=target.resource.plural)
        if not commit:
            return obj
        if obj['metadata'].get('finalizers'):
            if obj['metadata'].get('deletionTimestamp'):
                return obj
            obj['metadata']['deletionTimestamp'] = _now()  # the finalizers' owners complete the deletion
            return self._save(store, obj, 'MODIFIED')
        return self._remove(store, obj)

    async def _evict(self, target: Target, info: kmock.ResourceInfo, store: kmock.resource, body: Any) -> aiohttp.web.Response:
        """POST pods/NAME/eviction (policy/v1 Eviction): the Pod is deleted with the Eviction's deleteOptions.

        There are no PodDisruptionBudgets in the stand-in, so an eviction is never refused (429) for one.
        """
        if not isinstance(body, dict) or body.get('kind', 'Eviction') != 'Eviction':
            raise api_error(400, 'BadRequest', 'the body of a pods/eviction request must be an Eviction')
        if (body.get('metadata') or {}).get('name') not in (None, target.name):
            raise api_error(400, 'BadRequest', f'name in URL does not match name in Eviction object ({target.name})')
        self._delete(dataclasses.replace(target, subresource=None), info, store, body.get('deleteOptions') or {}, commit=True)
        await self._notify()
        return aiohttp.web.json_response({'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success', 'code': 201}, status=201)

    def _remove(self, store: kmock.resource, obj: dict[str, Any]) -> dict[str, Any]:
        if store == self._storage[NAMESPACE_RESOURCE]:
            for (res, namespace, _name), stored in list(self.objects.items()):
                if namespace == obj['metadata']['name'] and not stored.deleted:
                    self._save(res, copy.deepcopy(stored.raw), 'DELETED')
        return self._save(store, obj, 'DELETED')

    # ---- custom resource definitions ------------------------------------------------------------

    def _crd_changed(self, crd: dict[str, Any], deleted: bool) -> None:
        """Serve (or stop serving) the kinds that a CustomResourceDefinition declares."""
        spec = crd['spec']
        names = spec['names']
        for res in [res for res, store in self._storage.items() if store.group == spec['group'] and store.plural == names['plural']]:
            del self.resources[res]
            del self._storage[res]
        storage_version = next((v['name'] for v in spec['versions'] if v.get('storage')), spec['versions'][0]['name'])
        storage = kmock.resource(spec['group'], storage_version, names['plural'])
        if deleted:
            for (res, _ns, _name), stored in list(self.objects.items()):
                if res == storage and not stored.deleted:
                    self._save(res, copy.deepcopy(stored.raw), 'DELETED')
            return
        for version in spec['versions']:
            if version.get('served', True):
                subresources = version.get('subresources') or {}
                self._register(kmock.resource(spec['group'], version['name'], names['plural']), names['kind'], spec['scope'] == 'Namespaced',
                               subresources=[sub for sub in ('status', 'scale') if sub in subresources],
                               shortnames=names.get('shortNames', ()), categories=names.get('categories', ()),
                               singular=names.get('singular'), storage=storage)


def _crd_problems(crd: dict[str, Any]) -> list[dict[str, str]]:
    spec = crd.get('spec')
    if not isinstance(spec, dict):
        return [{'field': 'spec', 'message': 'Required value'}]
    names = spec.get('names') or {}
    causes = [{'field': f'spec.{field}', 'message': 'Required value'} for field, value in
              (('group', spec.get('group')), ('names.plural', names.get('plural')), ('names.kind', names.get('kind')), ('versions', spec.get('versions')))
              if not value]
    if spec.get('scope') not in ('Namespaced', 'Cluster'):
        causes.append({'field': 'spec.scope', 'message': 'Unsupported value: must be "Namespaced" or "Cluster"'})
    if not causes and crd['metadata'].get('name') != f'{names["plural"]}.{spec["group"]}':
        causes.append({'field': 'metadata.name', 'message': f'must be spec.names.plural+"."+spec.group ({names["plural"]}.{spec["group"]})'})
    if not causes and not all(isinstance(v, dict) and v.get('name') for v in spec['versions']):
        causes.append({'field': 'spec.versions', 'message': 'every version needs a name'})
    return causes


SPEC_STRUCT_KINDS = {'Node'}


def _initial_status(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The status that the system itself gives a newly created object, where it gives one."""
    if obj['kind'] == 'Namespace':
        return {'phase': 'Active'}
    if obj['kind'] == 'Pod':
        return {'phase': 'Pending'}
    if obj['kind'] == 'CustomResourceDefinition':
        now = _now()
        return {
            'acceptedNames': obj['spec']['names'],
            'storedVersions': [v['name'] for v in obj['spec']['versions'] if v.get('storage')],
            'conditions': [{'type': kind, 'status': 'True', 'reason': reason, 'lastTransitionTime': now, 'message': ''}
                           for kind, reason in (('NamesAccepted', 'NoConflicts'), ('Established', 'InitialNamesAccepted'))],
        }
    return None
