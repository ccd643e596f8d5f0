"""examples/audit.ipynb runs from a fresh clone (nbclient, a real Jupyter kernel; no network, no key) and
shows what it promises: the progress bar in the cell, the report with its decision panel first, a cells
frame with the cell key and the figures, and the stored judgments."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "examples/audit.ipynb"
#: 28 demo pairs x 2 orders x 3 repetitions x 2 judges
N_TRIALS = 28 * 2 * 3 * 2


def fresh_clone(dest: Path) -> Path:
    """The files a clone of this checkout would hold (tracked and new, not ignored: no runs/, no .venv),
    copied from the working tree."""
    try:
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no fresh clone to run the notebook from")
    for name in filter(None, listed.decode().split("\0")):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _text(output: dict[str, Any], mime: str) -> str:
    data = output.get("data", {}).get(mime, "")
    return "".join(data) if isinstance(data, list) else str(data)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    clone = fresh_clone(tmp_path_factory.mktemp("clone"))
    nb = nbformat.read(clone / NOTEBOOK, as_version=4)
    # one more cell, never saved: which verdictlab the kernel imported
    nb.cells.append(nbformat.v4.new_code_cell("import verdictlab; print(verdictlab.__file__)"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", str(clone / "src"))     # the clone's package, not the test session's install
        mp.delenv("VERDICTLAB_SHARED_DATA", raising=False)
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                                         resources={"metadata": {"path": str(clone / "examples")}})
        client.execute()
    return clone, nb


@pytest.mark.slow
def test_the_notebook_runs_from_a_fresh_clone_with_the_clones_package(executed: Any) -> None:
    clone, nb = executed
    assert nb.cells[-1].outputs[0]["text"].strip() == str(clone / "src" / "verdictlab" / "__init__.py")
    assert (clone / "examples" / "runs" / "notebook" / "run.sqlite").is_file()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o["output_type"] == "error"]
    assert errors == []


@pytest.mark.slow
def test_the_report_shows_itself_decision_panel_first_with_nothing_fetched(executed: Any) -> None:
    _, nb = executed
    audit_cell = nb.cells[1]
    (shown,) = [o for o in audit_cell.outputs if o["output_type"] == "execute_result"]
    frame = _text(shown, "text/html")
    assert frame.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts"' in frame
    page = html.unescape(re.search(r'srcdoc="(.*?)"', frame, re.S).group(1))
    sections = re.findall(r'<section id="([\w-]+)"', page)
    assert sections[0] == "decision", sections[:5]
    assert "The decision: which configuration to use" in page
    assert re.search(r'(?:src|href)="(?:https?:)?//', page) is None          # self-contained: no fetch
    assert "127.0.0.1:8765" not in page                                        # no links to a viewer not running
    assert _text(shown, "text/plain").startswith("Report(run_dir='runs/notebook', 2 cells")


@pytest.mark.slow
def test_the_progress_bar_is_drawn_in_the_cell(executed: Any) -> None:
    _, nb = executed
    views = [o["data"]["application/vnd.jupyter.widget-view+json"] for o in nb.cells[1].outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 1
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"][views[0]["model_id"]]
    assert state["model_name"] == "OutputModel"
    drawn = "".join(_text(o, "text/plain") for o in state["state"]["outputs"])
    assert "judging" in drawn and f"{N_TRIALS}/{N_TRIALS}" in drawn       # the final count, not a late frame
    streams = "".join(o.get("text", "") for o in nb.cells[1].outputs if o["output_type"] == "stream")
    assert "ipywidgets" not in streams                                      # no "install ipywidgets" warning


def _frame(output: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The column names and the first column's values of a DataFrame's HTML output."""
    table = _text(output, "text/html")
    head = re.search(r"<thead>(.*?)</thead>", table, re.S).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    columns = [c.strip() for c in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S) if c.strip()]
    first = re.findall(r"<tr>\s*<th>\d+</th>\s*<td>(.*?)</td>", body, re.S)
    return columns, first


@pytest.mark.slow
def test_the_cells_and_judgments_frames(executed: Any) -> None:
    _, nb = executed
    (cells_out,) = [o for o in nb.cells[3].outputs if o["output_type"] == "execute_result"]
    columns, judges = _frame(cells_out)
    assert columns == ["judge", "protocol", "dataset", "temperature", "C", "phi", "A", "T"]
    assert sorted(judges) == ["python:shorter", "sim:skill=0.8,position_lock=0.2,noise=0.1,seed=1"]
    (judg_out,) = [o for o in nb.cells[5].outputs if o["output_type"] == "execute_result"]
    columns, first = _frame(judg_out)
    assert columns == ["judge", "item_id", "order", "rep", "verdict", "label", "parse_status"] and len(first) == 5
