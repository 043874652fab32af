#!/usr/bin/env bash
# Benchmarks: submission intake on Postgres (req/s, p50/p99 for a 100 KB
# notebook), grading latency against a plain nbconvert run per chapter
# (warm and cold) and throughput at 1 and 2 slots, the
# queue's claim latency, claims over HTTP against pgbench, 1,000 idle runners,
# the comparators, and the server memory of the worst uploads.
set -euo pipefail
cd "$(dirname "$0")/.."
export NPUGRADE_NEED_POSTGRES=1
bash scripts/deps.sh
pg_dir=/tmp/npugrade-bench-pg-$$
trap 'bash scripts/testpg.sh stop "$pg_dir"' EXIT
export NPUGRADE_TEST_POSTGRES_DSN=$(bash scripts/testpg.sh start "$pg_dir" | tail -1)
mkdir -p out
# Per chapter in the cpu environment: submit->graded p50 against the sum of
# the cells' own times inside the kernel (target: at most that + 0.2 s), and
# where the rest goes (before the first cell, between cells, after the last).
latency() {
	go build -o bin/npugrade ./cmd/npugrade
	bash scripts/env.sh
	NPUGRADE_TEST_ENV_DIR="$PWD/data/envs/cpu" NPUGRADE_REQUIRE_ENV=1 go test -run '^$' -bench 'BenchmarkLatency$' -benchtime 1x -timeout 30m ./cmd/npugrade/ | tee out/bench-latency.txt
}
if [ "${1:-}" = latency ]; then
	latency
	exit 0
fi
go test -run '^$' -bench 'BenchmarkIntake$' -benchtime 400x ./cmd/npugrade/ | tee out/bench-intake.txt
# Grading latency per chapter answer, warm (pre-started kernels) and cold,
# against a plain nbconvert run side by side; then graded submissions per
# minute at 1 and 2 slots; then execution alone (hand-over to result).
go test -run '^$' -bench 'BenchmarkGrading(Latency|Throughput)' -benchtime 1x -timeout 40m ./cmd/npugrade/ | tee out/bench-grading.txt
# The same in the cpu grading environment (built if missing): a notebook
# running torch.compile graded warm vs a raw nbconvert --execute inside the
# environment (target ratio <= 0.3).
go build -o bin/npugrade ./cmd/npugrade
bash scripts/env.sh
NPUGRADE_TEST_ENV_DIR="$PWD/data/envs/cpu" NPUGRADE_REQUIRE_ENV=1 go test -run '^$' -bench 'BenchmarkGradingLatencyInEnvironment' -benchtime 1x -timeout 20m ./cmd/npugrade/ | tee out/bench-env.txt
# Bursts: 10 chapter answers graded in the cpu environment with 1 and 2 slots,
# --warm-spares 1, 2 and 5 (NPUGRADE_BENCH_SPARES=1,5 picks others); prints graded/min, the
# ratio of 2 slots to 1 (target >= 1.8), the spares' memory and the load average.
NPUGRADE_TEST_ENV_DIR="$PWD/data/envs/cpu" NPUGRADE_REQUIRE_ENV=1 go test -run '^$' -bench 'BenchmarkBurst' -benchtime 1x -timeout 30m ./cmd/npugrade/ | tee out/bench-burst.txt
# What sets that ratio: the CPU of a warm spare's start and of a job, started from scratch
# (exec) and forked from the zygotes (fork, --fork-server), and the ratio they predict.
NPUGRADE_TEST_ENV_DIR="$PWD/data/envs/cpu" NPUGRADE_REQUIRE_ENV=1 go test -run '^$' -bench 'BenchmarkSpareCPU' -benchtime 3x -timeout 20m ./internal/execution/ | tee out/bench-spare-cpu.txt
go test -run '^$' -bench 'BenchmarkExecute' -benchtime 3x -timeout 20m ./internal/execution/ | tee out/bench-execute.txt
go test -run '^$' -bench . -benchtime 1s ./internal/compare/ | tee out/bench-units.txt
# Claim latency p50/p99: 10,000 queued jobs, 64 concurrent long-polling runners, Postgres.
go test -run '^$' -bench BenchmarkClaimLatency -benchtime 3000x ./internal/jobs/ | tee out/bench-claim.txt
# claim: the same 10,000 jobs claimed by 64 runners over the runner protocol (real HTTP,
# `npugrade serve` as its own process on its default flags), runner-like: the runners run in
# a process of their own (runnerclient, as `npugrade runner`), register inside the measured
# window, claim with the default long poll, decode each lease with its notebook and heartbeat
# every lease they hold every third of the lease TTL. Against pgbench of the server's claim
# statement at 64 clients, prepared as the server's pool runs it (targets: >= 0.7x its rate,
# p99 <= 2x its p99, no double lease); beside it the old-style figure (claims alone from the
# benchmark's process, registered beforehand, against pgbench in simple mode, which plans the
# statement on every run) and the CPU per claim of the server, the client and Postgres.
# NPUGRADE_BENCH_CPUPROFILE / NPUGRADE_BENCH_FLEET_CPUPROFILE=FILE profile the server / runners.
go test -run '^$' -bench 'BenchmarkClaim$' -benchtime 1x -timeout 20m ./cmd/npugrade/ | tee out/bench-claim-http.txt
# idle-runners: 1,000 `npugrade runner` loops (runnerclient, a process of their own) on an
# empty queue, registering inside the 30 s window: server CPU, RSS, the CPU of the database's
# Postgres backends and the transactions/s the server makes Postgres run (targets: < 5 % of a
# core, < 150 MB); then the old-style figure (bare long polls, registered before the window).
go test -run '^$' -bench 'BenchmarkIdleRunners' -benchtime 1x -timeout 20m ./cmd/npugrade/ | tee out/bench-idle-runners.txt
# Gradebook CSV export: 10,000 learners x 5 exercises (50,000 graded submissions), streamed.
go test -run '^$' -bench 'BenchmarkGradebookCSV' -benchtime 5x -benchmem ./internal/web/ | tee out/bench-gradebook.txt
# Worst uploads: the most expensive notebooks under the 8 MiB limit, posted to a
# real server; peak server heap growth and time to the answer (target: < 64 MB, < 100 ms).
go test -run '^$' -bench 'BenchmarkWorstUpload' -benchtime 3x ./internal/httpapi/ | tee out/bench-worst-upload.txt
# An 85 MB runner registration sent chunked with a valid runner token: peak server heap
# growth (target: < 64 MB; it was 224 MB before every body was capped).
go test -run '^$' -bench 'BenchmarkOversizeRegistration' -benchtime 3x ./internal/httpapi/ | tee out/bench-oversize-registration.txt
# Rosters: a roster of 500 imported in one call (SQLite and
# Postgres); the similarity report of a class of 500.
go test -run '^$' -bench 'BenchmarkImportRoster500' -benchtime 5x ./internal/accounts/ | tee out/bench-roster.txt
go test -run '^$' -bench 'BenchmarkCompare500' -benchtime 3x ./internal/similarity/ | tee out/bench-similarity.txt
# Intake against the database alone — POST /api/v1/submissions
# of distinct ~100 KB ch1 notebooks at 4 and 16 clients vs pgbench running the rows
# intake writes in one transaction (targets: >= 0.7x at 4 clients, p99 <= 50 ms):
# first with the very bytes the server stored (the like-for-like ratio), then with the
# older md5-repeat blobs for continuity; each line adds CPU per transaction of the
# Postgres backends and of the test process (server + client), and blobs' growth;
# then the floor under intake (an HTTP server that only receives, hashes and stores the
# same rows) against pgbench and the server; SQLite vs raw inserts with the same driver. Then the dashboard at 500,000 seeded
# submissions: /dashboard p50/p95 (<= 150 ms), the gradebook page p95 (<= 300 ms),
# the CSV against COPY of its query (>= 0.8x).
go test -run '^$' -bench 'BenchmarkIntakeVsDatabase' -benchtime 1x -timeout 30m ./cmd/npugrade/ | tee out/bench-intake-vs-db.txt
go test -run '^$' -bench 'BenchmarkDashboard' -benchtime 1x -timeout 30m ./cmd/npugrade/ | tee out/bench-dashboard.txt
# Intake's notebook work on the ~100 KB ch1 upload, per upload: Parse,
# the rebuild from the exercise's template, and both (ns, CPU ns incl. GC, bytes, allocations).
go test -run '^$' -bench 'BenchmarkParseUpload|BenchmarkRebuildUpload|BenchmarkIntakeNotebook' -benchtime 2000x -benchmem ./internal/notebook/ | tee out/bench-intake-notebook.txt
latency
