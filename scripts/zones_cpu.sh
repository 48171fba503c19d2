#!/usr/bin/env bash
# CPU of the zones example split over processes against the same world on
# one server (docs/zones.md, "What four processes cost"). Each round runs,
# one after another on this machine:
#
#   standalone  four zone processes, the gateway process with the bots and
#               a standalone nats-server
#   hosted      with HOSTED=1: four zone processes and the gateway process
#               serving NATS itself (-nats-listen)
#   one         the one-server run (-zones 1)
#
#   scripts/zones_cpu.sh [rounds] [seconds]      # from the repository root
#
# Each run's CPU is counted from WARMUP seconds after its bots start
# joining (10: the ten thousand are in by then) to a second before its
# end: the world's cost once it runs, not its join storm (WARMUP=0 counts
# from the first bot). Linux only: CPU comes from /proc/PID/stat. Every
# process of the split runs with GOMAXPROCS=1, as docs/zones.md advises
# for processes sharing a machine's cores (a zone process with -pool=false
# takes it by itself). Every process, the one server's included, runs with
# GODEBUG=schedtrace=2147483647, which keeps Go's monitor thread from
# polling every 20 us after each idle spell (docs/operations.md, "Processes
# that share a machine's cores"); a GODEBUG in the environment replaces it
# (GODEBUG= runs without). PLAYERS sets the bots (10000).
set -euo pipefail
export GODEBUG=${GODEBUG-schedtrace=2147483647}
rounds=${1:-3}
secs=${2:-45}
warmup=${WARMUP:-10}
flags="-crowd borders -world 512 -players ${PLAYERS:-10000}"
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/zones" ./examples/zones
go build -o "$dir/nats-server" github.com/nats-io/nats-server/v2
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in clock ticks
cpus() { local s=0 p; for p in "$@"; do s=$((s + $(cpu "$p"))); done; echo $s; }
field() { grep -o "$1=[0-9.]*" "$2" | tail -1 | cut -d= -f2; }
sum() { awk '{s += $1} END {print s + 0}'; }
now() { date +%s%N; }
cores() { awk -v c=$1 -v t=$2 -v hz=$tick 'BEGIN {printf "%.2f", c / hz / (t / 1e9)}'; }

# window PID... : the CPU of the processes over the measured window, as
# "cores" (busy cores on average), once the window has passed.
window() {
	sleep "$warmup"
	local c0 t0 c1 t1
	c0=$(cpus "$@")
	t0=$(now)
	sleep $((secs - warmup - 1))
	c1=$(cpus "$@")
	t1=$(now)
	cores $((c1 - c0)) $((t1 - t0))
}

# zones_summary: switch p99 of each zone, the share of all switches past
# two tick periods (which decides whether the p99 is 2), and hand-offs
# and lost, duplicated inputs and lost sessions summed, from the zone
# logs.
zones_summary() {
	local p99 past2 handoffs lost
	p99=$(for z in 1 2 3 4; do field switch_p99_ticks "$dir/zone$z.log"; done | paste -sd, -)
	past2=$(for z in 1 2 3 4; do grep -o 'switch_ticks=[0-9/]*' "$dir/zone$z.log" | tail -1 | cut -d= -f2; done |
		awk -F/ '{for (i = 1; i <= NF; i++) {n += $i; if (i > 3) late += $i}} END {printf "%.4f", n ? late / n : 0}')
	handoffs=$(for z in 1 2 3 4; do field handoffs "$dir/zone$z.log"; done | sum)
	lost=$(for z in 1 2 3 4; do
		field lost_inputs "$dir/zone$z.log"
		field duplicated_inputs "$dir/zone$z.log"
		field sessions_lost "$dir/zone$z.log"
	done | sum)
	echo "switch_p99=$p99 switch_past2=$past2 handoffs=$handoffs lost_dup_sessions=$lost"
}

start_zones() { # URL
	zp=()
	for z in 1 2 3 4; do
		"$dir/zones" -role zone -zone $z -pool=false $flags -nats "$1" -duration 0 >"$dir/zone$z.log" 2>&1 &
		zp+=($!)
	done
}

stop_zones() {
	kill -INT "${zp[@]}"
	wait "${zp[@]}" || true
}

standalone() { # port
	local url=nats://127.0.0.1:$1 np gp
	GOMAXPROCS=1 "$dir/nats-server" -js -a 127.0.0.1 -p $1 -sd "$dir/js$1" >"$dir/nats.log" 2>&1 &
	np=$!
	sleep 1
	start_zones $url
	sleep 2
	GOMAXPROCS=1 "$dir/zones" -role gateway $flags -join-rate 1000 -nats $url -duration ${secs}s >"$dir/gw.log" 2>&1 &
	gp=$!
	used=$(window $np $gp "${zp[@]}")
	wait $gp
	stop_zones
	kill $np
	wait $np || true
}

hosted() { # port
	local gp
	GOMAXPROCS=1 "$dir/zones" -role gateway $flags -join-rate 1000 -nats-listen 127.0.0.1:$1 -duration $((secs + 4))s >"$dir/gw.log" 2>&1 &
	gp=$!
	until (echo >/dev/tcp/127.0.0.1/$1) 2>/dev/null; do sleep 0.1; done
	start_zones nats://127.0.0.1:$1
	sleep 3 # the gateway lets its bots in once the zones report (about a second)
	used=$(window $gp "${zp[@]}")
	wait $gp
	stop_zones
}

for i in $(seq "$rounds"); do
	standalone $((4300 + 2 * i))
	split=$used
	st=$(zones_summary)
	if [ "${HOSTED:-0}" = 1 ]; then
		hosted $((4301 + 2 * i))
		host=$used
		ht=$(zones_summary)
	fi
	"$dir/zones" -zones 1 $flags -join-rate 1000 -duration ${secs}s >"$dir/one.log" 2>&1 &
	one=$(window $!)
	wait
	line=$(awk -v i=$i -v s=$split -v o=$one -v st="$st" 'BEGIN {
		printf "round %d one=%.2f standalone=%.2f ratio=%.2f (%s)", i, o, s, s / o, st
	}')
	if [ "${HOSTED:-0}" = 1 ]; then
		line+=$(awk -v h=$host -v o=$one -v ht="$ht" 'BEGIN {printf " hosted=%.2f ratio=%.2f (%s)", h, h / o, ht}')
	fi
	echo "$line"
done
