#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 15), on stable Rust (no sanitizer: libFuzzer's
# coverage only), starting from the seeds in fuzz/seeds/ (the seeds stay as they are; the run's corpus
# grows in fuzz/corpus/). A crash fails the run and leaves its input in fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-15}"
for target in rules resp_reader wire_answer connection_core keys; do
  mkdir -p "corpus/$target"
  echo "fuzz $target for ${seconds}s"
  cargo fuzz run --sanitizer none -O "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=512 -print_final_stats=0 2>&1 | grep -E "^Done|panicked|SUMMARY|ERROR" || true
  test -z "$(ls -A "artifacts/$target" 2>/dev/null)" || { echo "fuzz $target found a crash: fuzz/artifacts/$target"; exit 1; }
done
