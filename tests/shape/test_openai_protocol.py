"""The OpenAI protocol is spoken in one place, ``rigbook/openai/``: outside it no module builds a
chat body (a ``"messages"`` key), reads a reply's events (``"choices"`` or ``"delta"`` taken out of
an object) or joins the chat path by hand (``"chat/completions"``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rigbook"
PROTOCOL = ROOT / "openai"
KEYS = {"messages": "builds a chat body", "choices": "reads a reply", "delta": "reads a reply"}
CHAT_PATH = "chat/completions"


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def protocol_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, the key or path) for each place a tree speaks the protocol itself."""
    found = []
    for node in ast.walk(tree):
        keys: list[str | None] = []
        if isinstance(node, ast.Dict):
            keys = [_key(k) for k in node.keys if k is not None]
        elif isinstance(node, ast.Subscript):
            keys = [_key(node.slice)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
        ):
            keys = [_key(node.args[0])]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and CHAT_PATH in node.value
            and len(node.value) < 40  # a path, not prose that names it
        ):
            found.append((node.lineno, CHAT_PATH))
        found += [(node.lineno, key) for key in keys if key in KEYS]
    return found


def _outside() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if not p.is_relative_to(PROTOCOL)]


def test_only_rigbook_openai_speaks_the_protocol() -> None:
    offences = [
        f"{path.relative_to(ROOT.parent)}:{line}: {KEYS.get(key, 'joins the chat path')} ({key!r})"
        for path in _outside()
        for line, key in protocol_uses(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offences, "build bodies and fold events in rigbook/openai:\n" + "\n".join(offences)


def test_the_check_sees_a_body_a_fold_and_a_hand_joined_path() -> None:
    source = (
        'body = {"model": m, "messages": [{"role": "user", "content": p}]}\n'
        'payload["messages"][0]\n'
        'for choice in data.get("choices") or ():\n'
        '    text = choice["delta"]\n'
        'url = base + "/v1/chat/completions"\n'
    )
    lines = sorted(line for line, _ in protocol_uses(ast.parse(source)))
    assert lines == [1, 2, 3, 4, 5]


def test_the_protocol_module_itself_is_seen_speaking_it() -> None:
    # the check reads what rigbook/openai does: a body is built there, and events are folded there
    seen = {
        key
        for path in PROTOCOL.glob("*.py")
        for _, key in protocol_uses(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert seen == {*KEYS, CHAT_PATH}
