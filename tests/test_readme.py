"""The README stays true: its commands, its transcripts and its function reference."""

from tests.conftest import ROOT, run_cli
from trainbudget.addin.functions import docs

README = (ROOT / "README.md").read_text("utf-8")


def test_two_setup_commands_and_ci_runs_the_test_command():
    assert "pip install -e . && trainbudget estimate" in README
    assert "bash tests/run-all.sh" in README
    assert "bash tests/run-all.sh" in (ROOT / ".ci" / "run").read_text()


def test_function_reference_is_generated_from_the_registry():
    section = README.split(docs.START)[1].split(docs.END)[0]
    assert section.strip() == docs.function_reference().strip()


def test_transcripts_are_real_output():
    assert run_cli("estimate", check=True).stdout.strip() in README
    assert run_cli("runs", check=True).stdout.strip() in README


def test_every_transcript_is_the_commands_output(soffice):
    """Regenerate with `python -m tests.readme_transcripts` after a change to the output (export
    needs LibreOffice, hence the fixture)."""
    from tests import readme_transcripts

    assert readme_transcripts.same(readme_transcripts.regenerate(README), README)


def test_setup_creates_a_virtual_environment():
    assert "python3 -m venv .venv && . .venv/bin/activate" in README
