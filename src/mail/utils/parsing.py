"""v1.3.6 import path: re-exports the reference parsing of :mod:`mail.swarms_json.references`.

``PYTHON_STRING_PREFIX`` and ``URL_STRING_PREFIX`` are v1.3.6's names of
:data:`~mail.swarms_json.references.PYTHON_PREFIX` and
:data:`~mail.swarms_json.references.URL_PREFIX`.
"""

from __future__ import annotations

from mail.swarms_json.references import (
    DEFAULT_POLICY,
    PYTHON_PREFIX,
    SWARM_MODULES,
    URL_PREFIX,
    ReferencePolicy,
    read_python_string,
    read_untrusted_python_string,
    read_url_string,
    resolve_prefixed_string_references,
    target_address_is_interswarm,
)
from mail.swarms_json.references import PYTHON_PREFIX as PYTHON_STRING_PREFIX
from mail.swarms_json.references import URL_PREFIX as URL_STRING_PREFIX

__all__ = [
    "DEFAULT_POLICY",
    "PYTHON_PREFIX",
    "PYTHON_STRING_PREFIX",
    "SWARM_MODULES",
    "URL_PREFIX",
    "URL_STRING_PREFIX",
    "ReferencePolicy",
    "read_python_string",
    "read_untrusted_python_string",
    "read_url_string",
    "resolve_prefixed_string_references",
    "target_address_is_interswarm",
]
