# Sourced by the one-call GPU scripts (run_a.sh, run_b.sh) from the repository root: the output folder, the
# clock, python, and the packages as this tree has them (the GPU machine has no pip install of the project:
# a folder of links named as they import, first on PYTHONPATH).
set -u
OUT=${OUT:?set OUT}
START=$(date +%s)
mkdir -p "$OUT"
PACKAGES=$(mktemp -d /tmp/gpusim_packages.XXXX)
ln -sfn "$PWD/gpusim" "$PACKAGES/gpusim"
ln -sfn "$PWD/kernels" "$PACKAGES/gpusim_kernels"
ln -sfn "$PWD/course" "$PACKAGES/gpusim_course"
export PYTHONPATH=$PACKAGES:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
command -v "$PY" > /dev/null || PY=python
