"""Every notebook under notebooks/ runs top to bottom in an IPython shell without an error."""
import glob
import json
import os

import pytest
from IPython.core.interactiveshell import InteractiveShell

NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "notebooks", "*.ipynb")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, capsys):
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    shell = InteractiveShell.instance()
    try:
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            result = shell.run_cell("".join(cell["source"]))
            assert result.success, f"cell failed: {''.join(cell['source'])}\n{result.error_in_exec!r}"
    finally:
        shell.run_line_magic("unload_ext", "tfjupyter")
        shell.reset()
        InteractiveShell.clear_instance()
    out = capsys.readouterr().out
    assert out.strip()
