"""What the launch tests share: running the CLI in a subprocess, the fixture rig, recipe files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures"
RIG_2X = FIXTURES / "rigs" / "launch-2x-rtx-pro-6000.json"
SEED = (
    FIXTURES / "recipes" / "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3.json"
)
GUIDE = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"


def rigbook(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, with stdin not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def write_recipe(
    tmp_path: Path, slug: str, launch: dict, *, gpus: int = 0, serve: dict | None = None
) -> Path:
    """A minimal recipe file with a `rigbook.launch` block."""
    recipe = {
        "slug": slug,
        "title": slug,
        "config": {"launch": []},
        "hardware": [
            {
                "slug": "x",
                "vendor": "nvidia",
                "card": "RTX PRO 6000 Blackwell",
                "device_count": gpus,
            }
        ]
        if gpus
        else [],
        "rigbook": {"launch": launch, **({"serve": serve} if serve else {})},
    }
    path = tmp_path / f"{slug}.json"
    path.write_text(json.dumps(recipe))
    return path
