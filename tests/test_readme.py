"""The README and docs/ stay true: their commands, transcripts, API lines and function reference."""

import re

import pytest

from tests.conftest import ROOT, run_cli
from trainbudget.addin.functions import docs

README = (ROOT / "README.md").read_text("utf-8")
FUNCTIONS_PAGE = (ROOT / "docs" / "functions.md").read_text("utf-8")


def test_two_setup_commands_and_ci_runs_the_test_command():
    assert "pip install -e . && trainbudget estimate" in README
    assert "bash tests/run-all.sh" in README
    assert "bash tests/run-all.sh" in (ROOT / ".ci" / "run").read_text()


def test_readme_is_short_and_links_every_page():
    assert len(README.splitlines()) <= 200
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in README, f"README does not link docs/{page.name}"


def test_function_reference_is_generated_from_the_registry():
    section = FUNCTIONS_PAGE.split(docs.START)[1].split(docs.END)[0]
    assert section.strip() == docs.function_reference().strip()


def test_transcripts_are_real_output():
    assert run_cli("estimate", check=True).stdout.strip() in README


def _api_lines() -> list[tuple[str, str]]:
    """(expression, the figure its comment states) of the README's five-line API."""
    block = README.split("```python\n")[1].split("```")[0]
    out = []
    for line in block.splitlines():
        code, _, comment = line.partition("#")
        number = re.match(r"\s*(\d[\d.,]*)\b", comment)
        if code.strip() and not code.startswith("from") and number:
            out.append((code.strip(), number.group(1).replace(",", "")))
    return out


@pytest.mark.parametrize(("expression", "stated"), _api_lines())
def test_the_api_lines_compute_what_their_comments_say(expression, stated):
    from trainbudget import calc

    value = float(eval(expression, {"calc": calc}))  # the README's own line, as a user would run it
    decimals = len(stated.partition(".")[2])
    assert round(value, decimals) == pytest.approx(float(stated)), expression


def test_every_transcript_is_the_commands_output(soffice):
    """Regenerate with `python -m tests.readme_transcripts` after a change to the output (export
    needs LibreOffice, hence the fixture)."""
    from tests import readme_transcripts

    for page in readme_transcripts.PAGES:
        text = page.read_text("utf-8")
        assert readme_transcripts.same(readme_transcripts.regenerate(text), text), page.name


def test_setup_creates_a_virtual_environment():
    assert "python3 -m venv .venv && . .venv/bin/activate" in README
