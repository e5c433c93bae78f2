"""The one Hugging Face repo-id parser: every form a recipe writes gives the same id, and
nothing that could leave the models folder is an id."""

from __future__ import annotations

import pytest

from rigbook.recipe.hf import artifact_repo, parse_repo_id
from rigbook.recipe.schema import Artifact


@pytest.mark.parametrize(
    "text",
    [
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "hf://HuggingFaceTB/SmolLM2-135M-Instruct",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/tree/main",
        " hf://HuggingFaceTB/SmolLM2-135M-Instruct/ ",
    ],
)
def test_every_form_gives_org_slash_name(text):
    assert parse_repo_id(text) == "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "SmolLM2",
        "hf://",
        "a/b/c",
        "../etc/passwd",
        "hf://../x",
        "org/..",
        "/abs/path",
        "https://example.com/org/name",
        "org/name with space",
        ".hidden/name",
    ],
)
def test_what_is_not_a_repo_id_is_none(text):
    assert parse_repo_id(text) is None


def test_only_hf_model_artifacts_name_a_repository():
    weights = Artifact(kind="weights", pointer_type="hf_model", pointer="hf://org/name", pin="abc")
    image = Artifact(kind="image", pointer_type="docker_image", pointer="org/name", pin="abc")
    assert artifact_repo(weights) == "org/name" and artifact_repo(image) is None
