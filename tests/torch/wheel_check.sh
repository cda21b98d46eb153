#!/usr/bin/env bash
# Label "long": `pip install --no-build-isolation` of the repository into a fresh target
# directory (the wheel scikit-build-core builds from pyproject.toml), then `import tutti.torch`
# from another directory and a 2-rank all-reduce under torchrun, with nothing of the build
# tree on the path. Usage: wheel_check.sh <source dir> <python>
set -euo pipefail
src=$1 py=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip install -q --no-build-isolation --no-deps --target "$tmp/site" "$src"
cat >"$tmp/job.py" <<'PY'
import sys, torch, torch.distributed as dist, tutti.torch
assert tutti.torch.__file__.startswith(sys.argv[1]), tutti.torch.__file__
dist.init_process_group("tutti")
r, n = dist.get_rank(), dist.get_world_size()
t = torch.full((5,), float(r + 1))
dist.all_reduce(t)
assert t.tolist() == [n * (n + 1) / 2] * 5, t
open(f"{sys.argv[1]}/rank{r}", "w").write("ok")
dist.destroy_process_group()
PY
cd "$tmp"
PYTHONPATH="$tmp/site" "$py" -m torch.distributed.run --standalone --nproc-per-node 2 job.py "$tmp/site"
test -f "$tmp/site/rank0" && test -f "$tmp/site/rank1"
echo "wheel check passed"
