"""Start-up stays light: a server with no peers never imports ``aiohttp`` (about half a
second of imports), the first call to a peer does; the runtime loads with the first
caller's swarm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import asyncio, json, sys, urllib.request
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve

DATA, SWARMS = sys.argv[1], sys.argv[2]


def post(url, body):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer k", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def main():
    overrides = {"server": {"swarm": {
        "name": "offline", "source": SWARMS, "registry": DATA + "/registry.json"}}}
    config = load_config(None, env={"MAIL_DATA_DIR": DATA, "SWARM_REGISTRY_FILE": f"{DATA}/r.json"}, search=False, overrides=overrides)
    app = create_app(config, authenticator=StaticAuth({"k": ("user", "u1")}))
    async with serve(app) as url:
        print("runtime before a message:", "mail.core.runtime" in sys.modules)
        answer = await asyncio.to_thread(post, url + "/message", {"body": "What is 2 + 3?"})
        print("answered", answer["response"])
        request = urllib.request.Request(
            url + "/message",
            data=json.dumps({"body": "What is 4 + 4?", "stream": True}).encode(),
            headers={"Authorization": "Bearer k", "Content-Type": "application/json"},
        )
        stream = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())
        print("streamed", b"event: task_complete" in stream and b"8" in stream)
        print("aiohttp before a peer call:", "aiohttp" in sys.modules)
        try:  # a peer that is not there: the call is made, and fails
            await app.state.mail.registry.register_swarm("peer", "http://127.0.0.1:9")
        except Exception as e:
            print("peer call failed:", type(e).__name__)
        print("aiohttp after a peer call:", "aiohttp" in sys.modules)

asyncio.run(main())
"""


def test_server_imports_neither_runtime_nor_aiohttp_before_it_needs_them(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), str(ROOT / "swarms.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "runtime before a message: False"
    assert lines[1].startswith("answered ") and "5" in lines[1]
    assert lines[2:] == [
        "streamed True",
        "aiohttp before a peer call: False",
        "peer call failed: RemoteSwarmUnavailableError",
        "aiohttp after a peer call: True",
    ]


def test_the_app_module_is_importable_by_its_dotted_name() -> None:
    import mail.server
    import mail.server._app as app_module

    assert app_module.create_app is mail.server.create_app


OPENAPI_PROBE = r"""
import asyncio, sys, urllib.request
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve


def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


async def main():
    overrides = {"server": {"data_dir": sys.argv[1], "swarm": {"source": sys.argv[2]}}}
    config = load_config(None, env={}, search=False, overrides=overrides)
    app = create_app(config, authenticator=StaticAuth({"k": ("user", "u1")}))
    async with serve(app) as url:
        await asyncio.to_thread(get, url + "/health")  # routes in use before the document
        print(await asyncio.to_thread(get, url + "/openapi.json"))

asyncio.run(main())
"""


def test_the_document_served_after_requests_is_the_generated_one(tmp_path: Path) -> None:
    # in a child process: the route modules (and their documentation) are fresh there
    result = subprocess.run(
        [sys.executable, "-c", OPENAPI_PROBE, str(tmp_path), str(ROOT / "swarms.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout)
    committed = yaml.safe_load((ROOT / "spec" / "openapi.yaml").read_text(encoding="utf-8"))
    assert served == committed
