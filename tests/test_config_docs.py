"""docs/configuration.md is generated from the settings model, so it cannot drift from what is accepted;
the README's short table names real settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mettaclaw.config import DOCS_PAGE, Config, Lens, ScopePolicy, main, settings_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_the_configuration_page_is_what_the_settings_generate() -> None:
    page = (ROOT / DOCS_PAGE).read_text(encoding="utf-8")
    assert page == settings_markdown(), (f"{DOCS_PAGE} differs from the settings in src/mettaclaw/config.py: "
                                         f"python -m mettaclaw.config --markdown > {DOCS_PAGE}")


@pytest.mark.parametrize("model", [Config, ScopePolicy, Lens])
def test_every_setting_says_what_it_does(model: type) -> None:
    assert [name for name, field in model.model_fields.items() if not field.description] == []


def test_every_setting_has_its_row_on_the_page() -> None:
    page = settings_markdown()
    for name in Config.model_fields:
        assert f"\n| `{name}` |" in page


def test_python_m_config_markdown_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == settings_markdown()
    assert main([]) == 2


def test_the_readme_names_only_real_settings() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Settings"):]
    table = table[: table.index("\n## ", 1)]
    named = {name for row in table.splitlines() if row.startswith("| `")
             for name in re.findall(r"`([A-Za-z_]+)`", row.split("|")[1])}
    assert named and named <= set(Config.model_fields), named - set(Config.model_fields)
