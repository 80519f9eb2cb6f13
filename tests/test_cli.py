"""python -m gpusim: the JSON a script reads, the tables a person reads. Bad input: tests/test_errors.py."""
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim import cli
from gpusim.sweep import fa2_shape
from gpusim.units import fmt_bytes, fmt_flops, fmt_time

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_count_json_equals_simulate():
    p = run("count", "--algo", "flash2", "--seq", "4096", "--head-dim", "64", "--heads", "16", "--block-q", "128",
            "--block-kv", "64", "--gpu", "H100-SXM", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, heads=16, block_q=128, block_kv=64, gpu="H100-SXM")
    assert out == json.loads(json.dumps(r.to_dict()))
    assert out["config"]["gpu"] == "H100-SXM" and out["hbm_read_bytes"] == 545_259_520


@pytest.mark.parametrize("flags, kwargs", [
    (["--backward"], dict(backward=True)),
    (["--backward", "--backward-blocks", "64,64"], dict(backward=True, backward_blocks=(64, 64))),
    (["--gpus", "4", "--strategy", "zigzag", "--causal"], dict(gpus=4, strategy="zigzag", causal=True)),
    (["--gpus", "4", "--strategy", "ZIGZAG", "--causal"], dict(gpus=4, strategy="Zigzag", causal=True)),  # any case
    (["--seq-kv", "12288", "--causal", "--causal-align", "bottom_right"],
     dict(seq_kv=12288, causal=True, causal_align="bottom_right")),
])
def test_count_runs_a_training_step_and_several_gpus_as_simulate_does(flags, kwargs):
    p = run("count", "--algo", "flash2", "--seq", "8192", "--head-dim", "64", "--gpu", "H200", *flags, "--json")
    assert p.returncode == 0, p.stderr
    r = gpusim.simulate("flash2", seq=8192, head_dim=64, gpu="H200", **kwargs)
    assert json.loads(p.stdout) == json.loads(json.dumps(r.to_dict()))
    text = run("count", "--algo", "flash2", "--seq", "8192", "--head-dim", "64", "--gpu", "H200", *flags).stdout
    several = "--gpus" in flags
    assert ("over its link" in text) == several
    assert not several or f"sends {fmt_bytes(r.link_send_bytes)} over its link" in text
    assert ("dkdv" in text) == ("--backward" in flags)
    b = r.backward_config
    assert (b is not None) == ("--backward" in flags) and (b is None or f"; the backward at {b.block_q} x {b.block_kv}"
                                                            in text.splitlines()[0])


@pytest.mark.parametrize("seq_kv, kwargs", [("131072", dict(seq_kv=131072, batch=None, page_size=16)),
                                             ("1000,70000,4096", dict(seq_kv=[1000, 70000, 4096], batch=3))])
def test_decode_runs_split_kv_as_simulate_does(seq_kv, kwargs):
    """python -m gpusim decode: one length, or one per request (a ragged batch), as simulate("split_kv", ...)."""
    page = ["--page-size", "16"] if kwargs.get("page_size") else []
    args = ["decode", "--seq-kv", seq_kv, "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu", "H200",
            *page]
    p = run(*args, "--json")
    assert p.returncode == 0, p.stderr
    r = gpusim.simulate("split_kv", heads=32, kv_heads=8, head_dim=128, gpu="H200", **kwargs)
    assert json.loads(p.stdout) == json.loads(json.dumps(r.to_dict()))
    head = run(*args).stdout.splitlines()[0]
    assert head.startswith(f"split_kv on H200: batch {r.config.batch} x heads 32 (kv heads 8)")
    assert f"{r.config.num_splits} split(s)" in head and ("(ragged)" in head) == ("," in seq_kv)


def test_decode_picks_a_chunk_that_fits_and_names_the_option_to_change():
    """On a T4 the default 64-key chunk does not fit the split kernel's shared memory: decode prices 32, the launch
    --block-kv 32 gives; --block-kv 64 is refused with the option to give."""
    args = ["decode", "--seq-kv", "4096", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu", "T4"]
    p = run(*args, "--json")
    assert p.returncode == 0, p.stderr
    assert p.stdout == run(*args, "--block-kv", "32", "--json").stdout
    assert "block_kv 32" in run(*args).stdout.splitlines()[0]
    refused = run(*args, "--block-kv", "64")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "a smaller block_kv fits: block_kv=32 (--block-kv 32 on the command line)" in refused.stderr


def _fields(value, path=""):
    """The field paths of count --json, as the README's table writes them."""
    if isinstance(value, dict):
        return set().union(*(_fields(v, f"{path}.{_key(path, k)}".lstrip(".")) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(_fields(v, f"{path}[]") for v in value))
    return {path}


def _key(path, key):
    return "<tensor>" if path in ("by_tensor", "dram_by_tensor") else key


def test_readme_json_table_lists_every_field():
    printed = set()
    for algo in gpusim.ALGOS:  # between them every tensor and kernel
        p = run("count", "--algo", algo, "--seq", "256", "--head-dim", "64", "--gpu", "H100-SXM", "--json")
        assert p.returncode == 0, p.stderr
        printed |= _fields(json.loads(p.stdout))
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### JSON fields"):].split("\n\n")[2]
    documented = set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.M))
    assert printed == documented, (printed - documented, documented - printed)


def test_count_table_scales_units():
    p = run("count", "--algo", "naive", "--seq", "131072", "--head-dim", "64", "--heads", "2", "--gpu", "H100-SXM")
    assert p.returncode == 0, p.stderr
    assert "softmax" in p.stdout and "OUT OF MEMORY" in p.stdout and "128.09 GiB" in p.stdout
    assert "TFLOP" in p.stdout and " ms" in p.stdout


def test_count_table_splits_the_bytes_asked_of_hbm_from_those_past_the_l2():
    p = run("count", "--algo", "naive", "--seq", "4096", "--head-dim", "64", "--gpu", "H100-SXM")
    r = gpusim.simulate("naive", seq=4096, head_dim=64, gpu="H100-SXM")
    assert p.returncode == 0, p.stderr
    assert r.dram_read_bytes < r.hbm_read_bytes  # the L2 catches some: else the two columns would say the same
    assert f"of it DRAM read {fmt_bytes(r.dram_read_bytes)}, write {fmt_bytes(r.dram_write_bytes)}" in p.stdout
    s = r.dram_by_tensor["S"]
    line = next(line for line in p.stdout.splitlines() if line.startswith("S "))
    assert line.split()[-4:] == [*fmt_bytes(s["dram_read_bytes"]).split(), *fmt_bytes(s["dram_write_bytes"]).split()]


def test_signs_and_non_finite_values_print_as_such():
    assert (fmt_time(-0.002), fmt_time(-2.5e-8), fmt_bytes(-2048), fmt_flops(-5)) == (
        "-2.000 ms", "-25.0 ns", "-2.00 KiB", "-5 FLOP")
    assert (fmt_time(float("inf")), fmt_time(float("-inf")), fmt_bytes(float("nan"))) == ("inf s", "-inf s", "nan B")
    assert fmt_bytes(-(2**81)) == "-2.147e+09 PiB"
    # NumPy's most negative integers negate to themselves (that recursed forever); a magnitude that prints as zero
    # takes no sign; NumPy's float32 is no Python float
    assert (fmt_bytes(np.int8(-128)), fmt_bytes(np.int64(np.iinfo(np.int64).min))) == ("-128 B", "-8,192.00 PiB")
    assert (fmt_time(-1e-12), fmt_bytes(-0.0), fmt_time(np.float32(-0.5))) == ("0.0 ns", "0.0 B", "-500.000 ms")


def test_huge_values_print_scaled():
    assert fmt_bytes(119_209_297_180.18 * 2**30) == "113,686.84 PiB"
    assert fmt_bytes(2**81) == "2.147e+09 PiB"
    assert fmt_time(26_672_915_003.033e-3) == "7,409.14 h"
    assert fmt_time(3.6e15) == "1.000e+12 h"
    # an integer past any float (int / int raised OverflowError), and one just inside
    assert (fmt_bytes(10**400), fmt_bytes(-(10**400)), fmt_time(10**400)) == (
        "8.882e+384 PiB", "-8.882e+384 PiB", "2.778e+396 h")
    assert fmt_bytes(int(sys.float_info.max)) == "1.597e+293 PiB"
    assert fmt_flops(2.5e12) == "2.50 TFLOP" and fmt_flops(12) == "12 FLOP"
    assert (fmt_bytes(1536), fmt_time(0.0123), fmt_time(2.5e-8)) == ("1.50 KiB", "12.300 ms", "25.0 ns")


def test_a_value_that_rounds_up_to_the_next_unit_prints_in_it():
    """3,599.9999 s printed "60.00 min"; the smallest unit keeps its exact floor (1,023 B is not 1.00 KiB)."""
    assert (fmt_time(3599.9999), fmt_time(0.9999999), fmt_time(0.99999e-6)) == ("1.00 h", "1.00 s", "1.000 us")
    assert (fmt_bytes(2**20 - 1), fmt_bytes(1023), fmt_flops(999_999), fmt_flops(999)) == (
        "1.00 MiB", "1,023 B", "1.00 MFLOP", "999 FLOP")


def test_algo_dtype_and_gpu_take_any_case():
    lower = run("count", "--algo", "flash2", "--seq", "1024", "--head-dim", "64", "--dtype", "bf16", "--gpu", "h100-sxm")
    upper = run("count", "--algo", "FLASH2", "--seq", "1024", "--head-dim", "64", "--dtype", "BF16", "--gpu", "H100-SXM")
    assert lower.returncode == 0 and lower.stdout == upper.stdout, upper.stderr


def test_gpus_lists_the_presets():
    p = run("gpus")
    assert p.returncode == 0 and all(name in p.stdout for name in gpusim.PRESETS)
    h200 = next(line.split() for line in p.stdout.splitlines() if line.startswith("H200 "))
    assert h200[6:10] == ["60.00", "MiB", "30.00", "MiB"]  # two partitions: data every SM re-reads fills half
    assert json.loads(run("gpus", "--json").stdout)["H200"]["sm_count"] == 132


def test_sweep_writes_json_and_the_course_draws_it(tmp_path):
    p = run("sweep", "--seqs", "512,1024,2048", "--head-dim", "128", "--gpu", "A100-40GB", "--out",
            str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # no progress bar where stderr is not a terminal
    rows = json.loads((tmp_path / "s.json").read_text())
    assert [(r["config"]["algo"], r["config"]["seq"]) for r in rows[:3]] == [("naive", 512), ("flash1", 512),
                                                                             ("flash2", 512)]
    time = r"[\d.]+ (us|ms) \((\d+) x (\d+)\)"
    row = re.search(rf"^2,048 +(\d+) x (\d+) +{time} +{time} +{time}$", p.stdout, flags=re.M)
    assert row, p.stdout
    assert (int(row[1]), int(row[2])) == fa2_shape(2048, 128) == (8, 16)
    r = gpusim.simulate("flash2", seq=2048, head_dim=128, batch=8, heads=16, gpu="A100-40GB")
    assert (int(row[10]), int(row[11])) == (r.config.block_q, r.config.block_kv)  # each row's tiles, as simulate's
    assert "batch = 16,384 tokens / N" in p.stdout.splitlines()[0]
    pytest.importorskip("matplotlib", reason="the figure is the course's (pip install -e '.[course]')")
    p = subprocess.run([sys.executable, "-m", "gpusim_course.provenance.plots", "sweep", str(tmp_path / "s.json")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_leaves_no_files_where_it_runs(tmp_path):
    """Without --out the JSON goes to the temporary folder, not the current one; the README names /tmp."""
    here, tmp = tmp_path / "here", tmp_path / "tmp"
    here.mkdir()
    tmp.mkdir()
    p = run("sweep", "--seqs", "512", cwd=here, env=os.environ | {"TMPDIR": str(tmp)})
    assert p.returncode == 0, p.stderr
    assert list(here.iterdir()) == [] and (tmp / "gpusim-sweep.json").exists()
    readme_out = re.search(r"python -m gpusim sweep .*--out (\S+)", (ROOT / "README.md").read_text()).group(1)
    assert Path(readme_out).is_absolute() and ROOT not in Path(readme_out).parents


def test_sweep_out_names_a_file_a_folder_or_one_ending_json(tmp_path):
    """--out OUT writes OUT.json; an existing folder takes gpusim-sweep.json inside it (not the folder's name plus
    .json beside it), and a name ending .json, in any case, is the file itself (c.JSON was c.JSON.json)."""
    for out, written in ((tmp_path, tmp_path / "gpusim-sweep.json"), (tmp_path / "a.json", tmp_path / "a.json"),
                         (tmp_path / "b", tmp_path / "b.json"), (tmp_path / "c.JSON", tmp_path / "c.JSON")):
        assert cli.main(["sweep", "--seqs", "512", "--algos", "flash2", "--out", str(out)]) == 0
        assert json.loads(written.read_text())[0]["config"]["seq"] == 512
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "c.JSON", "gpusim-sweep.json"]


@pytest.mark.parametrize("out, says", [
    ("", "argument --out: '' names no file: give a file, or a folder that exists"),  # was ./gpusim-sweep.json
    ("{tmp}/new/", "argument --out: {tmp}/new/: folder {tmp}/new does not exist"),  # was {tmp}/new.json
])
def test_sweep_out_that_names_no_file_is_refused(out, says, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sweep", "--seqs", "512", "--out", out.format(tmp=tmp_path)])
    assert exit_.value.code == 2 and says.format(tmp=tmp_path) in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be made")
def test_sweep_out_that_cannot_be_written_is_refused_before_the_sweep(monkeypatch, capsys):
    """/proc exists and a root user may write there, but no file can be made in it: the sweep refuses at once,
    not after its work (it was "[Errno 2] No such file or directory: '/proc/x.json'" once the sweep had run)."""
    monkeypatch.setattr(cli, "sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sweep", "--seqs", "512", "--out", "/proc/x"])
    assert exit_.value.code == 2
    assert "argument --out: /proc/x: cannot write /proc/x.json (" in capsys.readouterr().err


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(tmp_path, monkeypatch, capsys):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(["sweep", "--seqs", "512,1024", "--out", str(tmp_path / "s")]) == 0
    frames = terminal.getvalue().split("\r")[1:]
    assert [f.split()[-1] for f in frames] == [f"{n}/6" for n in range(1, 7)] and frames[-1].endswith("\n")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert cli.main(["sweep", "--seqs", "512,1024", "--out", str(tmp_path / "s")]) == 0
    assert sys.stderr.getvalue() == ""


def test_sweep_says_why_flash1_is_slower_than_naive():
    results = gpusim.sweep(seqs=(512, 4096, 16384), head_dim=128, gpu="H200")
    by = {(r.config.algo, r.config.seq): r for r in results}
    assert by["flash1", 4096].predicted_time_s > by["naive", 4096].predicted_time_s
    assert by["flash1", 512].predicted_time_s < by["naive", 512].predicted_time_s
    f1 = by["flash1", 16384].kernels[0]
    assert f1.programs == by["flash1", 16384].config.batch * by["flash1", 16384].config.heads  # one per (b, h)
    note = cli.flash1_note(results)
    assert note.startswith("flash1 is slower than naive at N = 4,096 to 16,384: it runs one thread block per "
                           "(batch, head), 64 to 16 blocks for 132 SMs, keeping 48% to 12% of them busy")
    assert f"{f1.busy_fraction:.0%}" == "12%" and "\n" not in note
    assert cli.flash1_note([r for r in results if r.config.seq == 512]) is None
    assert note.endswith("its memory time is 1.0x naive's, as it reads and writes O, l and m once per K/V block")
    # at d = 64 its memory time is a third of naive's: the reason given was its bytes all the same
    note = cli.flash1_note(gpusim.sweep(seqs=(512, 4096, 16384), head_dim=64, gpu="H200"))
    assert note.endswith("its memory time is 0.3x naive's: its idle SMs, not its bytes, make it slower")


def test_count_says_where_the_host_sets_a_training_steps_time_and_what_the_spills_add():
    """A small training step's predicted time is the host's cost per step (592.8 us on H200-measured) where its
    kernels' times add to far less; flash1's kernel rows hold its register spills, which the totals do not: the
    footer said neither, and the numbers looked as if they did not add up."""
    from gpusim.cli import _host_floor, _spills
    step = gpusim.simulate("flash2", seq=128, head_dim=64, heads=4, gpu="H200-measured", backward=True)
    kernels_s = sum(k.predicted_time_s for k in step.kernels)
    assert kernels_s < step.predicted_time_s == gpusim.get_gpu("H200-measured").train_step_host_s
    assert _host_floor(step).endswith(f"which the kernels' {fmt_time(kernels_s)} cannot beat")
    flash1 = gpusim.simulate("flash1", seq=64, head_dim=128, heads=16, gpu="H200")
    spill = sum(k.spill_read_bytes for k in flash1.kernels)
    assert spill and sum(k.read_bytes for k in flash1.kernels) == flash1.hbm_read_bytes + spill
    assert f"register spills, {fmt_bytes(spill)} and" in _spills(flash1)
    plain = gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="H200-measured")
    assert _host_floor(plain) == _spills(plain) == ""
    p = run("count", "--algo", "flash2", "--seq", "128", "--head-dim", "64", "--heads", "4", "--gpu", "H200-measured",
            "--backward")
    assert p.returncode == 0 and "the host's cost of a training step on H200-measured" in p.stdout


def test_a_context_parallel_count_names_no_tiles_most_of_its_steps_do_not_run():
    """The header said block_q 64, block_kv 64, the largest call's (step 0, its own shard under the diagonal); steps
    1-7 run other shapes, at their own tiles."""
    p = run("count", "--algo", "flash2", "--seq", "131072", "--head-dim", "64", "--heads", "32", "--kv-heads", "8",
            "--causal", "--gpu", "H200", "--gpus", "8", "--strategy", "zigzag")
    assert p.returncode == 0, p.stderr
    assert "each local call at its own shape's tiles" in p.stdout.splitlines()[0] and "block_q" not in p.stdout
    c = 131072 // 8
    diagonal, later = (gpusim.simulate("flash2", seq=n, seq_kv=c, head_dim=64, heads=32, kv_heads=8, causal=causal,
                                       gpu="H200").config for n, causal in ((c, True), (c, False)))
    assert (diagonal.block_q, diagonal.block_kv) != (later.block_q, later.block_kv)
    given = ["--algo", "flash2", "--seq", "4096", "--head-dim", "64", "--gpus", "4", "--strategy", "zigzag"]
    assert "block_q 64 and block_kv 32 in every local call" in run(
        "count", *given, "--block-q", "64", "--block-kv", "32").stdout.splitlines()[0]  # the caller's, in every call
    assert "block_q 64 in every local call, its other tile its shape's" in run(
        "count", *given, "--block-q", "64").stdout.splitlines()[0]


def test_the_host_floor_line_is_a_training_steps_only():
    """Over several GPUs the time past the kernels' is the link's (Ulysses' all-to-alls here), not the host's: the
    footer said a forward pass's time was the host's cost of a training step."""
    from gpusim.cli import _host_floor
    r = gpusim.simulate("flash2", seq=1024, head_dim=64, heads=8, gpus=8, strategy="ulysses", gpu="H200")
    assert r.predicted_time_s > sum(k.predicted_time_s for k in r.kernels) and _host_floor(r) == ""


def test_one_gpu_without_a_link_is_counted_and_printed():
    """--gpus 1 on a GPU without an NVLink preset (the T4) sends nothing: the table says so (it was an
    AttributeError on the Result's link, None), the JSON's link is null."""
    flags = ["count", "--algo", "flash2", "--seq", "4096", "--head-dim", "64", "--gpu", "T4", "--gpus", "1",
             "--strategy", "ulysses"]
    p = run(*flags)
    assert p.returncode == 0, p.stderr
    assert "ulysses over 1 GPUs on no link (one GPU sends nothing)" in p.stdout
    assert json.loads(run(*flags, "--json").stdout)["link"] is None


def test_link_help_lists_every_link_and_topology():
    text = run("count", "--help", env={**os.environ, "COLUMNS": "1000"}).stdout  # argparse wraps at hyphens
    assert all(name in text for name in [*gpusim.links.LINKS, *gpusim.links.TOPOLOGIES])
