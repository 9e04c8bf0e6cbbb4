"""Shared helpers of the cluster tests: raw API calls and throw-away names."""
import json
import uuid
from pathlib import Path
from typing import Any

# Subprocesses (python -m tests.standin, ansible-playbook) run from the repository root.
REPO = Path(__file__).resolve().parents[2]


def unique(prefix: str) -> str:
    return f'{prefix}-{uuid.uuid4().hex[:6]}'


def raw(kube_api: Any, method: str, path: str, body: Any = None, content_type: str = 'application/json',
        query: dict[str, str] | None = None) -> tuple[int, Any]:
    """One HTTP call through the kubernetes ApiClient (so real-cluster auth works); returns (status, decoded body)."""
    client = kube_api.api_client
    request = client.param_serialize(method, path, query_params=list((query or {}).items()),
                                     header_params={'Content-Type': content_type, 'Accept': 'application/json'},
                                     body=body, auth_settings=['BearerToken'])
    response = client.call_api(*request)
    response.read()
    try:
        return response.status, json.loads(response.data or b'null')
    except ValueError:
        return response.status, response.data.decode()
