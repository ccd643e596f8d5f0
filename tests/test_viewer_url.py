"""``--viewer-url`` takes exactly what docs/report.md says, ``http(s)://host[:port]``: quotes, spaces, port
99999 and an embedded newline were accepted (escaped in the page, but wrong); they are a usage error that
names the option."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.viewer_links import check_viewer_url

BAD = ['http://127.0.0.1:8765"', "http://'host':8765", 'http://"x":80', "http://127.0.0.1 :8765", "http://a b",
       "http://127.0.0.1:99999", "http://127.0.0.1:0", "http://127.0.0.1:8765\n", "http://127.0.0.1\n:8765",
       " http://127.0.0.1:8765", "javascript:alert(1)", "http://h/x", "http://u@h:1", "http://h:", "http://[::1",
       "http://-h-:1", "ftp://h", "http://h?x", "http://h#x", "http://é.example", "http://h:8765:1"]
GOOD = {"http://127.0.0.1:8765": "http://127.0.0.1:8765", "https://viewer.example.org/": "https://viewer.example.org",
        "http://[::1]:9000": "http://[::1]:9000", "http://localhost:1": "http://localhost:1"}


@pytest.mark.parametrize("url", BAD)
def test_an_address_the_docs_rule_out_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="http\\(s\\)://host\\[:port\\]"):
        check_viewer_url(url)


@pytest.mark.parametrize("url,base", GOOD.items())
def test_a_documented_address_is_taken(url: str, base: str) -> None:
    assert check_viewer_url(url) == base


@pytest.mark.parametrize("url", ['http://"x":80', "http://a b:80", "http://127.0.0.1:99999", "http://127.0.0.1:8765\nx"])
def test_the_report_refuses_them_naming_the_option(url: str, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["report", str(tmp_path / "no-run"), "--viewer-url", url])
    assert r.exit_code == 2 and "--viewer-url" in r.stderr, r.stderr
