"""HTTP actions: ``http_get``, ``http_post``, ``http_put``, ``http_delete``, ``http_patch``,
``http_head`` and ``http_options``, as ``swarms.json`` imports them
(``python::mail.stdlib.http.actions:http_get``).

Each is a :class:`~mail.api.MAILAction` that can also be awaited as a function of its
arguments (``await http_get({"url": "https://example.com"})``). Arguments: ``url`` (an
absolute ``http``/``https`` URL), ``headers`` (an object of strings, sent by every verb),
``body`` (``post``, ``put``, ``patch``: a JSON object, sent as JSON).

Results, always a string:

* a 2xx answer: the response body's text (``http_head`` and ``http_options``: the status
  line and the response headers, one ``Name: value`` per line, then for ``options`` a
  blank line and the body if there is one);
* any other status: ``Error: HTTP <status> <reason>: <the first 500 characters of the
  body>``;
* a refusal or failure: ``Error: ...`` naming the rule or limit of ``[stdlib.http]``
  (an address the outbound guard refuses, a scheme other than http(s), too many
  redirects, a body over ``max_response_bytes``, the timeout) or the failure.

Requests go through the outbound guard with the ``[stdlib.http]`` settings (see
docs/stdlib.md); redirects are followed up to ``max_redirects``, each one checked again.
"""

from __future__ import annotations

from typing import Any

from mail.api import MAILAction
from mail.net import Fetched
from mail.stdlib._kit import ActionFailed, ActionFunction, define, object_arg, schema, text_arg
from mail.stdlib._outbound import fetch
from mail.stdlib._settings import current

__all__ = [
    "HTTP_DELETE_PARAMETERS",
    "HTTP_GET_PARAMETERS",
    "HTTP_HEAD_PARAMETERS",
    "HTTP_OPTIONS_PARAMETERS",
    "HTTP_PATCH_PARAMETERS",
    "HTTP_POST_PARAMETERS",
    "HTTP_PUT_PARAMETERS",
    "http_delete",
    "http_get",
    "http_head",
    "http_options",
    "http_patch",
    "http_post",
    "http_put",
]

_EXCERPT = 500  # characters of an error status's body in the result

_URL = {"type": "string", "description": "The absolute http:// or https:// URL to request."}
_HEADERS = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "Request headers, name to value.",
}
_BODY = {"type": "object", "description": "The JSON object sent as the request body."}

#: ``http_get {url, headers?}``
HTTP_GET_PARAMETERS = schema({"url": _URL, "headers": _HEADERS}, ["url"])
#: ``http_post {url, headers, body}``
HTTP_POST_PARAMETERS = schema(
    {"url": _URL, "headers": _HEADERS, "body": _BODY}, ["url", "headers", "body"]
)
#: ``http_put {url, headers, body}``
HTTP_PUT_PARAMETERS = schema(
    {"url": _URL, "headers": _HEADERS, "body": _BODY}, ["url", "headers", "body"]
)
#: ``http_delete {url, headers?}``
HTTP_DELETE_PARAMETERS = schema({"url": _URL, "headers": _HEADERS}, ["url"])
#: ``http_patch {url, body, headers?}``
HTTP_PATCH_PARAMETERS = schema({"url": _URL, "headers": _HEADERS, "body": _BODY}, ["url", "body"])
#: ``http_head {url, headers?}``
HTTP_HEAD_PARAMETERS = schema({"url": _URL, "headers": _HEADERS}, ["url"])
#: ``http_options {url, headers?}``
HTTP_OPTIONS_PARAMETERS = schema({"url": _URL, "headers": _HEADERS}, ["url"])


def _headers(args: dict[str, Any], *, required: bool) -> dict[str, str]:
    headers = object_arg(args, "headers", required=required) or {}
    if not all(isinstance(value, str) for value in headers.values()):
        raise ActionFailed("'headers' must map header names to string values")
    return headers


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def _status_error(response: Fetched) -> ActionFailed:
    head = f"HTTP {response.status} {response.reason}".rstrip()
    body = _excerpt(response.text.strip())
    return ActionFailed(f"{head}: {body}" if body else head)


def _head_text(response: Fetched) -> str:
    lines = [f"HTTP {response.status} {response.reason}".rstrip()]
    lines += [f"{name}: {value}" for name, value in response.headers]
    return "\n".join(lines)


def _verb(
    method: str, *, body: bool, body_required: bool, headers_required: bool
) -> ActionFunction:
    async def run(args: dict[str, Any]) -> str:
        url = text_arg(args, "url").strip()
        headers = _headers(args, required=headers_required)
        payload = object_arg(args, "body", required=body_required) if body else None
        response = await fetch(method, url, current().http, headers=headers, json_body=payload)
        if not response.ok:
            raise _status_error(response)
        if method == "HEAD":
            return _head_text(response)
        if method == "OPTIONS":
            text = response.text.strip()
            return _head_text(response) + (f"\n\n{text}" if text else "")
        return response.text

    return run


def _action(name: str, method: str, description: str, parameters: dict[str, Any]) -> MAILAction:
    required = parameters["required"]
    run = _verb(
        method,
        body="body" in parameters["properties"] and method != "GET",
        body_required="body" in required,
        headers_required="headers" in required,
    )
    return define(name, description, parameters, run)


http_get = _action(
    "http_get", "GET", "Fetch a URL and return the response text.", HTTP_GET_PARAMETERS
)
http_post = _action(
    "http_post",
    "POST",
    "POST a JSON body to a URL and return the response text.",
    HTTP_POST_PARAMETERS,
)
http_put = _action(
    "http_put", "PUT", "PUT a JSON body to a URL and return the response text.", HTTP_PUT_PARAMETERS
)
http_delete = _action(
    "http_delete",
    "DELETE",
    "Send a DELETE request to a URL and return the response text.",
    HTTP_DELETE_PARAMETERS,
)
http_patch = _action(
    "http_patch",
    "PATCH",
    "PATCH a URL with a JSON body and return the response text.",
    HTTP_PATCH_PARAMETERS,
)
http_head = _action(
    "http_head",
    "HEAD",
    "Send a HEAD request to a URL and return the status line and response headers.",
    HTTP_HEAD_PARAMETERS,
)
http_options = _action(
    "http_options",
    "OPTIONS",
    "Send an OPTIONS request to a URL and return the status line, headers and body.",
    HTTP_OPTIONS_PARAMETERS,
)
