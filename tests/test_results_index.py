"""results/h200/README.md lists every file under results/ with the command that made it: a file nobody
listed, or a listed file that is gone, fails here."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "results"
INDEX = ROOT / "h200" / "README.md"
FILE_LIKE = re.compile(r"^[\w.*/-]+(\.(json|csv|md|png|txt|npz|tar\.gz)|/)$")


def named():
    """Every path the index names in backticks (relative to results/h200), as a glob."""
    return {token for token in re.findall(r"`([^`\s]+)`", INDEX.read_text()) if FILE_LIKE.match(token)}


def covered(path, globs):
    rel = path.relative_to(ROOT / "h200") if path.is_relative_to(ROOT / "h200") else Path("..") / path.relative_to(ROOT)
    return any(rel.match(g) or (g.endswith("/") and str(rel).startswith(g)) for g in globs)


def test_every_results_file_is_listed():
    globs = named()
    unlisted = [str(p.relative_to(ROOT)) for p in sorted(ROOT.rglob("*")) if p.is_file() and p != INDEX
                and not covered(p, globs)]
    assert not unlisted, f"add these to results/h200/README.md with the command that made them: {unlisted}"


def test_every_file_in_the_table_exists():
    first_cells = re.findall(r"^\| (`[^|]+) \|", INDEX.read_text(), re.M)  # the files table's first column
    files = [f for cell in first_cells for f in re.findall(r"`([^`]+)`", cell)]
    assert len(files) >= 20
    gone = [f for f in files if not list((ROOT / "h200").glob(f.rstrip("/")))]
    assert not gone, f"results/h200/README.md lists files that do not exist: {gone}"
