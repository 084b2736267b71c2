#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 15), on stable Rust (no sanitizer: libFuzzer's
# coverage only), starting from the seeds in fuzz/seeds/ (the seeds stay as they are; the run's corpus
# grows in fuzz/corpus/). A crash fails the run and leaves its input in fuzz/artifacts/; a target that
# does not build fails it too.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-15}"
for target in rules resp_reader wire_answer connection_core keys; do
  mkdir -p "corpus/$target"
  echo "fuzz $target for ${seconds}s"
  log="$(mktemp)"
  # cargo fuzz's own status decides (a build failure or a crash fails the run); the log is only filtered.
  status=0
  cargo fuzz run --sanitizer none -O "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=512 -print_final_stats=0 > "$log" 2>&1 || status=$?
  grep -E "^Done|panicked|SUMMARY|ERROR|^error" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "fuzz $target failed (cargo fuzz exited $status)"
    exit 1
  fi
  rm -f "$log"
  test -z "$(ls -A "artifacts/$target" 2>/dev/null)" || { echo "fuzz $target found a crash: fuzz/artifacts/$target"; exit 1; }
done
