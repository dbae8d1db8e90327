#!/usr/bin/env bash
# Fails, listing the files, when a C++ file differs from what clang-format makes of it
# (.clang-format). Fix with: clang-format -i $(git ls-files '*.h' '*.cpp')
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(find include src apps python tests bench examples cmake -name '*.h' -o -name '*.cpp' | sort)
differ=()
for file in "${files[@]}"; do
  clang-format --dry-run -Werror "$file" >/dev/null 2>&1 || differ+=("$file")
done
if [ ${#differ[@]} -gt 0 ]; then
  echo "check-format: ${#differ[@]} of ${#files[@]} files differ from the output of" \
    "$(clang-format --version | sed 's/ *(.*//'):" >&2
  printf '  %s\n' "${differ[@]}" >&2
  echo "fix with: clang-format -i ${differ[*]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
