"""``mail/__init__.py`` loads its public names on first access (keeps ``mail --help`` fast)."""

from __future__ import annotations

import subprocess
import sys

import mail

PUBLIC = (
    "__version__",
    "PROTOCOL_VERSION",
    "AgentToolCall",
    "MAILAction",
    "MAILAgent",
    "MAILAgentTemplate",
    "MAILSwarm",
    "MAILSwarmTemplate",
    "action",
    "MAILAddress",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILInterswarmMessage",
    "MAILMessage",
    "MAILRequest",
    "MAILResponse",
    "MAILRuntime",
)


def test_all_is_unchanged() -> None:
    assert tuple(mail.__all__) == PUBLIC


def test_every_public_name_resolves_to_its_defining_object() -> None:
    import mail.api
    import mail.core.message
    import mail.core.runtime
    import mail.core.tools

    for name in PUBLIC:
        value = getattr(mail, name)
        for module in (mail.api, mail.core.message, mail.core.runtime, mail.core.tools):
            if name in module.__all__:
                assert value is getattr(module, name)


def test_from_import_works() -> None:
    from mail import MAILSwarmTemplate, action

    assert MAILSwarmTemplate.__name__ == "MAILSwarmTemplate"
    assert callable(action)


def test_dir_lists_names_not_loaded_yet() -> None:
    assert set(PUBLIC) <= set(dir(mail))


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        _ = mail.MAILNoSuchThing  # type: ignore[attr-defined]
    except AttributeError as e:
        assert "MAILNoSuchThing" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def _child_output(code: str, env: dict[str, str]) -> list[str]:
    """The words ``code`` prints, run in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return result.stdout.split()


def test_import_mail_loads_no_pydantic_until_a_name_is_used(mail_env: dict[str, str]) -> None:
    code = (
        "import sys, mail; before = 'pydantic' in sys.modules; "
        "from mail import MAILSwarmTemplate; "
        "print(before, 'pydantic' in sys.modules, 'mail.api' in sys.modules)"
    )
    assert _child_output(code, mail_env) == ["False", "True", "True"]
