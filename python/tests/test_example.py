"""examples/python/train_bytes.py runs: compiles its model, trains, samples."""
import os
import subprocess
import sys

from conftest import REPO, build_dir


def test_train_bytes_example(tools, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("hello tfc, hello python. " * 100)
    result = subprocess.run(
        [sys.executable, REPO / "examples" / "python" / "train_bytes.py", text, "30",
         tmp_path / "work"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "TFC_BUILD_DIR": str(build_dir())})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("step 30  loss ")
    assert len("\n".join(lines[1:])) > 0  # the sample
    assert (tmp_path / "work" / "checkpoint.safetensors").exists()
