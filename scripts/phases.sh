# Sourced by the scripts that run in phases (test.sh, .ci/run): `phase NAME COMMAND...` runs the
# command under a heading and records how long it took; the durations are printed when the
# script ends, whether it succeeds or not.
phase_durations=()
phase() {
  local name=$1
  shift
  local started=$SECONDS
  echo "== $name =="
  local status=0
  "$@" || status=$?
  phase_durations+=("$(printf '%5d s  %s%s' $((SECONDS - started)) "$name" "$([ $status -eq 0 ] || echo "  (failed)")")")
  return $status
}
print_phase_durations() {
  if ((${#phase_durations[@]})); then
    printf '== %s ==\n' "${1:-durations}"
    printf '%s\n' "${phase_durations[@]}"
  fi
}
