"""Per-row ratio symcost / measured of tests/data/training_memory_measured.json (issue 24): run from the repository root."""
import json, statistics, sys, io, contextlib
from pathlib import Path
from symcost.cli.main import main
DATA = Path("tests/data")
ROWS = json.loads((DATA / "training_memory_measured.json").read_text())["rows"]
def model(n):
    p = DATA/"configs"/f"{n}.json"; return str(p) if p.exists() else n
mods=[]
for r in ROWS:
    if not r["args"]:
        print(f"{r['id']:40s} (no args)"); continue
    buf=io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc=main(["train", model(r["model"]), *r["args"], "--json"])
    out=json.loads(buf.getvalue())
    x=out["per_gpu_bytes"]/(r["measured_gib"]*2**30)
    nm = "not_modelled" in r
    if not nm: mods.append(x)
    print(f"{r['id']:40s} {out['per_gpu_bytes']/2**30:8.2f} {r['measured_gib']:7.2f} {x:6.3f} {'NM' if nm else ''}")
print("median |err|", statistics.median(abs(x-1) for x in mods), len(mods))
