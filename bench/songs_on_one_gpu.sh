#!/usr/bin/env bash
# Songs per hour on one GPU, one at a time against several at once (issue 63, item 4): K grafx
# programs fit K of the demo's songs (--song-seed 1..K) on the same GPU at the same time, as the
# dataset runner's workers do with `--device cuda` among the fit settings. Each song's results
# must equal its fit alone: song 1's losses, step by step, against its lone run.
#
#   [DEVICE=cuda] bench/songs_on_one_gpu.sh GRAFX_BINARY [STEPS=300] [K...=1 4 8]
set -uo pipefail
grafx=$1
steps=${2:-300}
shift $(($# > 1 ? 2 : 1))
counts=${*:-1 4 8}
work=$(mktemp -d)
threads=$(($(nproc) / 8 > 0 ? $(nproc) / 8 : 1))
rows=()
for k in $counts; do
  mkdir -p "$work/k$k"
  start=$(date +%s%N)
  for seed in $(seq 1 "$k"); do
    "$grafx" --threads "$threads" demo --device "${DEVICE:-cuda}" --steps "$steps" --song-seed "$seed" \
      -o "$work/k$k/song$seed" >"$work/k$k.song$seed.log" 2>&1 &
  done
  failed=0
  for job in $(jobs -p); do wait "$job" || failed=$((failed + 1)); done
  rows+=("$k $(($(date +%s%N) - start)) $failed")
  [ "$failed" = 0 ] || tail -5 "$work/k$k.song1.log"
done
python3 - "$work" "$steps" "${rows[@]}" <<'EOF'
import csv, os, sys
work, steps, rows = sys.argv[1], int(sys.argv[2]), [r.split() for r in sys.argv[3:]]
def losses(k):
    path = os.path.join(work, f"k{k}", "song1", "loss.csv")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [float(r["match_loss"]) for r in csv.DictReader(f)]
alone = losses(rows[0][0])
print(f"\nSongs on one GPU: the demo's songs (4 tracks, 8 s at 24 kHz), {steps} steps each, "
      "K grafx programs at once\n")
print("| songs at once | wall (s) | songs/hour | steps/s (all songs) | failed | "
      "song 1 against alone (largest relative loss difference) |")
print("|---:|---:|---:|---:|---:|---:|")
for k, wall, failed in rows:
    k, wall = int(k), int(wall) / 1e9
    mine = losses(k)
    if alone and mine and len(mine) == len(alone):
        difference = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(alone, mine))
        same = f"{difference:.2e}"
    else:
        same = "missing"
    print(f"| {k} | {wall:.1f} | {k * 3600 / wall:.0f} | {k * steps / wall:.1f} | {failed} | "
          f"{same} |")
EOF
