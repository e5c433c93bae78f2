from pathlib import Path

from rigbook.codes import CODES, Severity, codes_markdown

DOC = Path(__file__).parents[2] / "docs" / "codes.md"


def test_docs_codes_md_is_the_registry():
    assert DOC.read_text() == codes_markdown(), (
        "regenerate with: rigbook codes --format md > docs/codes.md"
    )


def test_the_seed_codes_keep_their_names_and_prefixes_match_severity():
    for code in ("E_P2P", "E_GPU_MEMORY", "W_POWER"):
        assert code in CODES
    prefix = {Severity.error: "E_", Severity.warning: "W_", Severity.info: "I_"}
    for c in CODES.values():
        assert c.code.startswith(prefix[c.severity]), c.code
        assert c.meaning and c.remedy
