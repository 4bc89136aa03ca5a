# Sourced by the scripts that regenerate a doc's outputs (guide.sh, your-own.sh), after they
# set `out` (the folder the outputs go to): a fresh working directory (so the store is a new
# ./seqbench.db, removed at exit), and `console`.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sb="${SEQBENCH:-$repo/.venv/bin/seqbench}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"

# console FILE CMD...: the seqbench command (as the doc shows it) and what it printed, as a
# block; a progress bar's frames are left out
console() {
  local file=$1
  shift
  {
    echo '```console'
    echo "\$ seqbench $*"
    "$sb" "$@" >"$work/.console" 2>&1  # a failing command stops the script (set -e)
    grep -v '━' "$work/.console" || true
    echo '```'
  } >"$out/$file"
}
