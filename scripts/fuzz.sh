#!/usr/bin/env bash
# Fuzzes every fuzz test of the module for a while: each target for
# FUZZTIME (30s unless set), one after another, package by package.
#
#   scripts/fuzz.sh                      # every target, 30 s each
#   FUZZTIME=5m scripts/fuzz.sh ./ecs/save   # one package's, longer
#
# go test runs each target's seeds and the inputs kept under
# testdata/fuzz in every ordinary run; this explores beyond them. A
# failing input is written to the package's testdata/fuzz/<target>/:
# keep it there, with the fix, so that every later run replays it.
# Inputs the fuzzer finds interesting are shrunk for at most 10 runs
# each (go test's default is a minute each, which stalls a short run).
set -euo pipefail
t=${FUZZTIME:-30s}
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
for pkg in $(go list "${pkgs[@]}"); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target"
		go test -run '^$' -fuzz "^$target\$" -fuzztime "$t" -fuzzminimizetime 10x "$pkg"
	done
done
