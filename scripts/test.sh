#!/usr/bin/env bash
# The whole test suite: Go tests on SQLite and a throwaway Postgres,
# brief fuzzing, and `npugrade check` of every answer, starter and fixture.
set -euo pipefail
cd "$(dirname "$0")/.."
export NPUGRADE_NEED_POSTGRES=1 NPUGRADE_NEED_LINT=1
bash scripts/deps.sh
pg_dir=${PG_DIR:-/tmp/npugrade-test-pg-$$}
cleanup() { bash scripts/testpg.sh stop "$pg_dir"; }
trap cleanup EXIT
export NPUGRADE_TEST_POSTGRES_DSN=$(bash scripts/testpg.sh start "$pg_dir" | tail -1)
echo "== Postgres for the tests: $NPUGRADE_TEST_POSTGRES_DSN"
mkdir -p out
echo "== the cpu grading environment (built once, reused while its packages and stand-in are unchanged)"
go build -o bin/npugrade ./cmd/npugrade
bash scripts/env.sh
# The tests that run kernels in it fail, rather than skip, without it.
export NPUGRADE_TEST_ENV_DIR="$PWD/data/envs/cpu" NPUGRADE_REQUIRE_ENV=1
# Where --env finds it from every test's working directory.
export NPUGRADE_ENVS_DIR="$PWD/data/envs"
echo "== go vet"
go vet ./...
echo "== redocly lint api/openapi.yaml"
if [ -x .tools/redocly/node_modules/.bin/redocly ]; then
  REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true .tools/redocly/node_modules/.bin/redocly lint api/openapi.yaml
else
  echo "redocly is not installed (no npm registry?): api/openapi.yaml is validated by the Go tests (kin-openapi) only"
fi
echo "== go test (SQLite and Postgres)"
go test -count=1 -timeout 25m ./... 2>&1 | tee out/go-test.log
echo "== fuzz (brief)"
bash scripts/fuzz.sh 20000x
echo "== npugrade check --profile cpu"
./bin/npugrade check --profile cpu --jobs 2 --junit out/check-junit.xml
echo "== cross-compile runner for linux/arm64 and linux/amd64"
GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -o /dev/null ./cmd/npugrade
GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -o /dev/null ./cmd/npugrade
echo "== all tests passed"
