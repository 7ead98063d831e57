# Helpers shared by the whole-process benchmarks (sourced; needs $W).

# t LABEL COMMAND...: runs COMMAND under /usr/bin/time, its output in
# $W/out.LABEL (or $T_STDOUT, e.g. /dev/null) and $W/err.LABEL; prints
# "seconds maxrss_kb". The run's CPU seconds (user + system) are kept in
# $W/cpu.LABEL (see `cpu`).
t() {
  local label=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$W/time.$label" "$@" >"${T_STDOUT:-$W/out.$label}" 2>"$W/err.$label" || { cat "$W/err.$label" >&2; exit 1; }
  local e m u s
  read -r e m u s < "$W/time.$label"
  python3 -c "print(f'{$u + $s:.2f}')" > "$W/cpu.$label"
  echo "$e $m"
}
# cpu LABEL: CPU seconds (user + system) of the last run `t` timed as LABEL.
cpu() { cat "$W/cpu.$1"; }
# mb KB: megabytes.
mb() { echo "$1/1024" | bc -l; }
# ratio A B: A / B as "N.Nx" (A and B are Python expressions).
# Each side is parenthesized: B may be a sum ("$INGEST + $REPORT").
ratio() { python3 -c "print(f'{($1) / ($2):.1f}x')"; }
