# Timing of script steps (sourced): `step "name" command...` runs the command and prints its
# duration; `summary` prints every step's duration (in the outermost script only: nested scripts
# add their steps to the same list).
if [ -z "${NANOBRAGG_STEP_TIMES:-}" ]; then
  export NANOBRAGG_STEP_TIMES="${TMPDIR:-/tmp}/nanobragg-steps.$$"
  export NANOBRAGG_STEP_OWNER=$$
  : >"$NANOBRAGG_STEP_TIMES"
fi

step() {
  local name="$1"
  shift
  echo "== $name"
  local t0=$SECONDS
  "$@"
  local dt=$((SECONDS - t0))
  printf '   (%s: %d:%02d)\n' "$name" $((dt / 60)) $((dt % 60))
  printf '%s\t%s\n' "$dt" "$name" >>"$NANOBRAGG_STEP_TIMES"
}

summary() {
  [ "${NANOBRAGG_STEP_OWNER:-}" = "$$" ] && [ -f "$NANOBRAGG_STEP_TIMES" ] || return 0
  echo "== time per step (m:ss)"
  local total=0 dt name
  while IFS=$'\t' read -r dt name; do
    printf '   %d:%02d  %s\n' $((dt / 60)) $((dt % 60)) "$name"
    total=$((total + dt))
  done <"$NANOBRAGG_STEP_TIMES"
  printf '   %d:%02d  total\n' $((total / 60)) $((total % 60))
  rm -f "$NANOBRAGG_STEP_TIMES"
}
