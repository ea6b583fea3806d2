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


def _api_block() -> list[str]:
    """The README's five-line API, its statements joined (a call may continue on the next line)."""
    block = README.split("```python\n")[1].split("```")[0]
    lines: list[str] = []
    for line in block.splitlines():
        if lines and line.startswith(" "):
            lines[-1] += " " + line.partition("#")[0].strip()
        else:
            lines.append(line)
    return lines


def _api_lines() -> list[tuple[str, str]]:
    """(expression, the figure its comment states) of the README's five-line API."""
    out = []
    for line in _api_block():
        code, _, comment = line.partition("#")
        number = re.match(r"\s*(\d[\d.,]*)\b", comment)
        if code.strip() and not code.startswith("from") and "=" not in code.split("(")[0] and number:
            out.append((code.strip(), number.group(1).replace(",", "")))
    return out


def _api_names() -> dict:
    """The names the block's assignments make (job, b), each line run as a user would."""
    from trainbudget import calc
    names: dict = {"calc": calc}
    for line in _api_block():
        code = line.partition("#")[0].strip()
        if code and not code.startswith("from") and "=" in code.split("(")[0]:
            exec(code, names)
    return names


def test_the_api_block_runs_and_states_two_figures():
    assert len(_api_lines()) >= 2
    names = _api_names()
    assert isinstance(names["b"], names["calc"].Budget) and names["b"].job == names["job"]
    last = _api_block()[-1].partition("#")[0].strip()
    assert eval(last, names).shape == (2,)  # the broadcast line gives one figure per job


@pytest.mark.parametrize(("expression", "stated"), _api_lines())
def test_the_api_lines_compute_what_their_comments_say(expression, stated):
    value = float(eval(expression, _api_names()))  # the README's own line, as a user would run it
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
