"""gpusim_course.formatting: the HTML tables the notebooks show and the number spans in their sentences."""
import numpy as np
import pytest

from gpusim_course.formatting import Html, cell, html_table, span, table_html


def test_table_html_has_a_header_of_the_keys_and_a_row_per_dict():
    got = table_html([{"algo": "naive", "bytes": 1536}, {"algo": "flash2", "bytes": 64}])
    assert got == ("<table><thead><tr><th>algo</th><th>bytes</th></tr></thead><tbody>"
                   "<tr><td>naive</td><td>1,536</td></tr><tr><td>flash2</td><td>64</td></tr></tbody></table>")


def test_table_html_escapes_what_it_shows():
    got = table_html([{"<b>": "a < b & c"}])
    assert "<th>&lt;b&gt;</th>" in got and "<td>a &lt; b &amp; c</td>" in got


def test_html_table_is_shown_rendered_without_ipython():
    table = html_table([{"x": 1}])
    assert isinstance(table, Html) and table._repr_html_() == table_html([{"x": 1}])


@pytest.mark.parametrize("value, shown", [
    (1234567, "1,234,567"), (np.int64(4096), "4,096"), (0.012345, "0.0123"), (np.float32(2.5), "2.5"),
    (12345.6, "12,346"), (True, "True"), ("fp16", "fp16"), (None, "None"),
])
def test_cell_formats_integers_floats_and_the_rest(value, shown):
    assert cell(value) == shown


def test_span_prints_both_ends_or_one_when_they_print_the_same():
    assert span([1.5, 0.25, 1.0]) == "0.25 to 1.50"
    assert span([0.101, 0.099], "{:.0%}") == "10%"
    assert span([-0.2, 0.05], "{:+.1%}") == "-20.0% to +5.0%"
