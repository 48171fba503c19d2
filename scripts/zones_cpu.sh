#!/usr/bin/env bash
# CPU of the zones example split over processes against the same world on
# one server (docs/zones.md, "Fewer messages, fewer threads"): each pair is
# four zone processes, the gateway process with the bots and a standalone
# nats-server, all on this machine, then the one-server run (-zones 1).
#
#   scripts/zones_cpu.sh [pairs] [seconds]      # from the repository root
#
# Linux only: the processes' CPU comes from /proc/PID/stat. Every process of
# the four-process side runs with GOMAXPROCS=1, as docs/zones.md advises for
# processes sharing a machine's cores (a zone process with -pool=false takes
# it by itself). PLAYERS sets the bots (10000).
set -euo pipefail
pairs=${1:-3}
secs=${2:-45}
flags="-crowd borders -world 512 -players ${PLAYERS:-10000}"
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/zones" ./examples/zones
go build -o "$dir/nats-server" github.com/nats-io/nats-server/v2
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in clock ticks
field() { grep -o "$1=[0-9.]*" "$2" | tail -1 | cut -d= -f2; }
sum() { awk '{s += $1} END {print s + 0}'; }

for i in $(seq "$pairs"); do
	url=nats://127.0.0.1:$((4300 + i))
	GOMAXPROCS=1 "$dir/nats-server" -js -a 127.0.0.1 -p $((4300 + i)) -sd "$dir/js$i" >"$dir/nats.log" 2>&1 &
	np=$!
	sleep 1
	zp=()
	for z in 1 2 3 4; do
		"$dir/zones" -role zone -zone $z -pool=false $flags -nats $url -duration 0 >"$dir/zone$z.log" 2>&1 &
		zp+=($!)
	done
	sleep 2
	t0=$(date +%s%N)
	n0=$(cpu $np)
	z0=0
	for p in "${zp[@]}"; do z0=$((z0 + $(cpu $p))); done
	GOMAXPROCS=1 "$dir/zones" -role gateway $flags -join-rate 1000 -nats $url -duration ${secs}s >"$dir/gw.log" 2>&1 &
	gp=$!
	sleep $((secs - 1))
	g1=$(cpu $gp)
	n1=$(cpu $np)
	z1=0
	for p in "${zp[@]}"; do z1=$((z1 + $(cpu $p))); done
	t1=$(date +%s%N)
	wait $gp
	kill -INT "${zp[@]}"
	wait "${zp[@]}" || true
	kill $np
	wait $np || true
	p99=$(for z in 1 2 3 4; do field switch_p99_ticks "$dir/zone$z.log"; done | paste -sd, -)
	handoffs=$(for z in 1 2 3 4; do field handoffs "$dir/zone$z.log"; done | sum)
	lost=$(for z in 1 2 3 4; do
		field lost_inputs "$dir/zone$z.log"
		field duplicated_inputs "$dir/zone$z.log"
		field sessions_lost "$dir/zone$z.log"
	done | sum)
	"$dir/zones" -zones 1 $flags -join-rate 1000 -duration ${secs}s >"$dir/one.log" 2>&1
	one=$(field cpu "$dir/one.log")
	awk -v i=$i -v n=$((n1 - n0)) -v z=$((z1 - z0)) -v g=$g1 -v w=$(((t1 - t0) / 1000000)) -v hz=$tick \
		-v one=$one -v p99=$p99 -v h=$handoffs -v l=$lost 'BEGIN {
		s = w / 1000 * hz; four = (n + z + g) / s
		printf "pair %d four=%.2f (nats=%.2f zones=%.2f gateway=%.2f) one=%.2f ratio=%.2f switch_p99=%s handoffs=%d lost_dup_sessions=%d\n",
			i, four, n / s, z / s, g / s, one, four / one, p99, h, l
	}'
done
