"""Tables for reading: units, sensible digits, percentages, wide ones folded."""
import math

import pandas as pd

from gpu_course.show import tables


def sweep_table(rows=5):
    workers = [1, 2, 4, 8, 16][:rows]
    return pd.DataFrame({
        "rung": [f"{w} workers" for w in workers], "num_workers": workers,
        "samples_per_sec": [301.326178 * w for w in workers],
        "epoch_time_s": [40.97 / w for w in workers], "gpu_util": [math.nan] * rows,
        "data_wait_share": [85.2 / w for w in workers], "speedup": [float(w) for w in workers],
        "val_acc": [0.1234] * rows, "status": ["finished"] * (rows - 1) + ["oom"],
        "gpu_util_std": [math.nan] * rows, "step_ms_mean": [212.3 / w for w in workers],
        "step_ms_std": [30.123] * rows})


def test_numbers_read_well():
    text = tables.show(sweep_table()).text()
    assert "301.326178" not in text and "301" in text and "4,821" in text
    assert "12.3%" in text and "×2.00" in text and "out of memory" in text and "–" in text
    assert "samples/s" in text and "epoch (s)" in text and "step mean (ms)" in text


def test_the_worker_sweep_fits_a_notebook_cell():
    table = tables.show(sweep_table(), width=96)
    assert len(table.blocks) > 1  # folded
    for line in table.text().splitlines():
        assert len(line) <= 96, line
    for block in table.blocks:
        assert block.columns[0] == "rung"  # every block says which row it is
    shown = {c for block in table.blocks for c in block.columns}
    assert {"workers", "samples/s (steady)", "step std (ms)", "status"} <= shown


def test_few_rows_and_many_columns_turn_on_their_side():
    table = tables.show(sweep_table(rows=2), width=60)
    assert list(table.blocks[0].columns) == ["", "1 workers", "2 workers"]
    assert all(len(line) <= 60 for line in table.text().splitlines())


def test_html_has_every_value_and_right_aligned_numbers():
    html = tables.show(sweep_table())._repr_html_()
    assert html.count("<table>") >= 2 and "text-align:right" in html and "4,821" in html


def test_an_index_becomes_leading_columns():
    df = pd.DataFrame({"resnet20": [1.0, 1.2345]}, index=pd.Index(["eager", "hybrid"], name="graph"))
    text = tables.show(df).text()
    assert text.splitlines()[0].split() == ["graph", "resnet20"] and "1.23" in text


def test_generic_numbers_keep_three_significant_digits():
    assert [tables.cell("x", v) for v in (301.326178, 30.1326, 3.01326, 0.0301326, 12345.6, 7)] \
        == ["301", "30.1", "3.01", "0.0301", "12,346", "7"]
    assert tables.header("step_ms_mean") == "step mean (ms)"
    assert tables.header("gpu_memory_mib") == "GPU memory (MiB)"


def test_text_columns_are_left_aligned_whatever_dtype_pandas_gives_text():
    """pandas 3 stores text as a "str" dtype, pandas 2 as object: both read as text."""
    frame = pd.DataFrame({"function": ["a.py:1(f)", "long_module.py:200(g)"], "calls": [3, 40]})
    table = tables.show(frame)
    assert table.text_columns == {"function"}
    assert table.text().splitlines()[2].startswith("a.py:1(f) ")
