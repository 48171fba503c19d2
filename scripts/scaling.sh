#!/usr/bin/env bash
# Scaling figures: the tick benchmarks on 1, 2, 4, 8 and 16 cores, from a
# test binary built beforehand (the machine that runs this needs no Go
# toolchain).
#
#   go test -c -o bench.test .          # here, where Go is
#   scripts/scaling.sh ./bench.test "$OUT"   # on the many-core machine
#
# It writes one benchstat-ready file per benchmark to the output folder and
# prints a table of us/tick, the speedup against 1 core and, for square/2000
# and world/10000, against the same scenario run inline (the issue's "at
# least 10 times faster than inline on 16 cores"), with the tick
# goroutine's own part beside it (goroutine-us/tick, which more cores
# barely shorten: inline over it bounds the speedup). Ticks run back to back
# (BenchmarkTick) and paced as a running server paces them
# (BenchmarkPacedTick, wake-ahead on).
set -euo pipefail
bin=${1:?usage: scripts/scaling.sh path/to/bench.test [output folder]}
out=${2:-out}
cpus=${CPUS:-1,2,4,8,16}
mkdir -p "$out"
# Each level of a pattern is anchored: Go matches a level's pattern
# anywhere in its name, so scenario=world would also run world-life.
run() { # name, bench pattern, benchtime (CPUS overrides the core counts)
	"$bin" -test.run '^$' -test.bench "$2" -test.benchtime "$3" -test.cpu "${CPUS:-$cpus}" -test.count "${COUNT:-3}" | tee "$out/$1.txt"
}
run square1000 'BenchmarkTick/scenario=square$/players=1000$/mode=parallel\+interest$' 40x
run square2000 'BenchmarkTick/scenario=square$/players=2000$/mode=parallel\+interest$' 30x
run world10000 'BenchmarkTick/scenario=world$/players=10000$/mode=parallel\+interest$' 30x
run paced 'BenchmarkPacedTick/scenario=/players=/wake=true$' 60x
# Inline takes one core whatever -test.cpu says: its figure is the baseline.
CPUS=1 run square2000-inline 'BenchmarkTick/scenario=square$/players=2000$/mode=inline\+interest$' 30x
CPUS=1 run world10000-inline 'BenchmarkTick/scenario=world$/players=10000$/mode=inline\+interest$' 30x
# us/tick by benchmark and core count (the -N suffix), median of the runs,
# and the speedup against the 1-core figure.
awk '/^Benchmark/ {
	g = ""
	for (i = 1; i <= NF; i++) {
		if ($(i+1) == "us/tick") v = $i
		if ($(i+1) == "goroutine-us/tick") g = $i
	}
	name = $1; n = 1; if (match(name, /-[0-9]+$/)) { n = substr(name, RSTART+1); name = substr(name, 1, RSTART-1) }
	k = name SUBSEP n; vals[k] = vals[k] " " v; names[name] = 1; ns[n] = 1
	if (g != "") own[k] = own[k] " " g
}
# The inline run of a scenario, by the name of its interest mode run on the
# pool: mode=inline+interest stands for mode=parallel+interest.
function pooled(name) { sub(/mode=inline\+interest$/, "mode=parallel+interest", name); return name }
function median(s,   a, m, i, j, t) {
	m = split(s, a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((m + 1) / 2)]
}
END {
	for (name in names) if (name ~ /mode=inline/) inl[pooled(name)] = median(vals[name, 1])
	for (name in names) {
		if (name ~ /mode=inline/) continue
		base = median(vals[name, 1])
		printf "%s%s\n", name, ((name in inl) ? sprintf("  (inline %.1f us/tick)", inl[name]) : "")
		for (n = 1; n <= 64; n++) if ((name, n) in vals) {
			m = median(vals[name, n]); printf "  %2d cores  %10.1f us/tick  %5.2fx", n, m, (base > 0 ? base / m : 0)
			if (name in inl) printf "  %5.2fx inline", inl[name] / m
			# The tick goroutine: its own part, and the most cores could
			# give against inline were everything else free.
			if ((name, n) in own) {
				g = median(own[name, n]); printf "  goroutine %.1f us", g
				if (name in inl && g > 0) printf " (inline over it %.1fx)", inl[name] / g
			}
			printf "\n"
		}
	}
}' "$out"/*.txt | tee "$out/speedup.txt"
