#!/usr/bin/env bash
# `just test-slurm`: `dptune sim slurm` on a real Slurm, started on this machine for the test
# (tools/slurm-local.sh: Debian's packages installed when missing, a one-node slurm.conf, munged,
# slurmctld and slurmd), with the study tests/fixtures/slurm/walks.toml (nine units, about 0.7 s
# each) sharded over 3 array tasks:
#   (a) the array and its merge job write tables, plots and parts byte for byte those of a plain
#       `dptune sim run`;
#   (b) one task cancelled midway (scancel, after its first unit): a second array on the same
#       folder is refused, so is a second run of the running shard (the lock); the merge job
#       fails naming exactly the missing units and writes no tables; the same command again
#       submits only that task, the result is byte for byte the plain run's, and no unit ran
#       twice (one timing record per unit; the runs' unit counts add up);
#   (c) an array whose tasks fail (each exits 137 after one unit): the merge job exits
#       non-zero, naming exactly the units without a part.
# The daemons it started are stopped by their process ids, and checked gone. Where they
# cannot start, it says so in one line and fails, unless DPTUNE_SKIP_SLURM=1.
# DPTUNE_BIN: the dptune binary (default target/debug/dptune, built by `cargo build`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
started=$SECONDS
bin="${DPTUNE_BIN:-$root/target/debug/dptune}"
file=tests/fixtures/slurm/walks.toml
name=slurm-walks
tasks=3

say() { echo "test-slurm: $*"; }
fail() {
    echo "test-slurm: FAILED: $*" >&2
    exit 1
}

[ -x "$bin" ] || fail "no dptune binary at $bin (run cargo build first)"

work=$(mktemp -d /tmp/dptune-test-slurm.XXXXXX)
chmod 755 "$work"
cluster="$work/cluster"
passed=""

cleanup() {
    local rc=$? pids p
    if [ -f "$cluster/slurm.conf" ]; then
        pids=$(cat "$cluster/slurmd.pid" "$cluster/slurmctld.pid" "$cluster/munge/munged.pid" 2>/dev/null || true)
        tools/slurm-local.sh stop "$cluster" || rc=1
        for p in $pids; do
            if [ -d "/proc/$p" ]; then
                echo "test-slurm: FAILED: daemon process $p is still running after stop" >&2
                rc=1
            fi
        done
        [ $rc -ne 0 ] || say "(d) the daemons it started (processes $(echo $pids)) are stopped"
    fi
    if [ -n "$passed" ] && [ $rc -eq 0 ]; then
        rm -rf "$work"
    else
        echo "test-slurm: kept $work (array and merge logs under */slurm/*/logs/, daemons' under cluster/log/)" >&2
    fi
    exit $rc
}
trap cleanup EXIT

if ! tools/slurm-local.sh start "$cluster" >"$work/start.log" 2>&1; then
    sed 's/^/  /' "$work/start.log" >&2
    rm -f "$cluster/slurm.conf" # nothing left running: slurm-local.sh stopped what it started
    if [ "${DPTUNE_SKIP_SLURM:-}" = 1 ]; then
        say "SKIPPED: the local Slurm daemons could not start here (output above; DPTUNE_SKIP_SLURM=1)"
        passed=y
        exit 0
    fi
    echo "test-slurm: the local Slurm daemons could not start here (output above); DPTUNE_SKIP_SLURM=1 skips this test" >&2
    exit 1
fi
cat "$work/start.log"
export SLURM_CONF="$cluster/slurm.conf"
say "Slurm up after $((SECONDS - started)) s"

# The units in the runner's order, each with the shard (array task) that runs it, from the
# list of missing units of a folder where nothing ran yet.
mapfile -t listing < <("$bin" sim status "$file" --profile smoke --out "$work/none" \
    --require-complete --tasks "$tasks" 2>/dev/null | sed -n 's/^  missing: //p')
[ ${#listing[@]} -eq 9 ] || fail "expected 9 units listed as missing in an empty folder, got ${#listing[@]}"
units_of_task() { # N: the units of array task N
    printf '%s\n' "${listing[@]}" | sed -n "s|^\(.*\) (unit [0-9]*, shard $1/$tasks)\$|\1|p"
}
mapfile -t task2 < <(units_of_task 2)
[ ${#task2[@]} -eq 3 ] || fail "expected 3 units in task 2, got: ${task2[*]}"

# Units with a timing record (written once a unit's part is written) in folder $1.
finished_units() {
    grep -o '"unit":"[^"]*"' "$1/$name/parts/timings.jsonl" 2>/dev/null | sed 's/^"unit":"//; s/"$//' || true
}
all_units() { printf '%s\n' "${listing[@]}" | sed 's/ (unit [0-9]*, shard [0-9]*\/[0-9]*)$//'; }

submit() { # OUT [more arguments of sim slurm]: sets array_id and merge_id
    local out=$1
    shift
    "$bin" sim slurm "$file" --profile smoke --tasks "$tasks" --out "$out" --submit "$@" \
        >"$work/submit.log" 2>&1 || {
        cat "$work/submit.log" >&2
        fail "dptune sim slurm --submit failed"
    }
    sed 's/^/    /' "$work/submit.log"
    array_id=$(sed -n 's/^submitted array job \([0-9]*\) .*/\1/p' "$work/submit.log")
    merge_id=$(sed -n 's/.* and merge job \([0-9]*\) .*/\1/p' "$work/submit.log")
    [ -n "$array_id" ] && [ -n "$merge_id" ] || fail "no job ids in the output of sim slurm --submit"
}

wait_gone() { # JOB [seconds]: until Slurm no longer lists it as pending or running
    local t0=$SECONDS limit=${2:-180}
    while [ -n "$(squeue --noheader --jobs="$1" 2>/dev/null)" ]; do
        [ $((SECONDS - t0)) -lt "$limit" ] || fail "job $1 still queued or running after $limit s"
        sleep 0.1
    done
}

field() { # JOB FIELD: e.g. JobState or ExitCode of a finished job (one line per array task)
    scontrol --oneliner show job "$1" | grep -o " $2=[^ ]*" | sed "s/^ $2=//"
}

merge_log() { cat "$1/slurm/$name-smoke/logs/merge-$2.out"; }

same_as_plain() { # OUT WHAT: every file of the results folder byte for byte the plain run's
    local a="$work/plain/$name" b="$1/$name" fa fb f
    list() { (cd "$1" && find . \( -path ./parts -o -path ./superseded \) -prune -o -type f \
        ! -name manifest.json ! -name '.*' -print | sort); }
    fa=$(list "$a")
    fb=$(list "$b")
    [ "$fa" = "$fb" ] || fail "$2: other files than the plain run's: $(diff <(echo "$fa") <(echo "$fb") | tr '\n' ' ')"
    for f in $fa; do
        cmp -s "$a/$f" "$b/$f" || fail "$2: $f differs from the plain run's"
    done
    cmp -s "$work/plain/README.md" "$1/README.md" || fail "$2: the index README.md differs from the plain run's"
    [ "$(cd "$a/parts" && ls ./*.parquet)" = "$(cd "$b/parts" && ls ./*.parquet)" ] ||
        fail "$2: the parts (named by their checksums) differ from the plain run's"
    echo "$(echo "$fa" | wc -l) files, the index and 9 parts"
}

t=$SECONDS
"$bin" sim run "$file" --profile smoke --out "$work/plain" --quiet >/dev/null
say "plain sim run: $((SECONDS - t)) s"

# (a) ------------------------------------------------------------------------------------
t=$SECONDS
say "(a) the study over $tasks array tasks and the merge job"
submit "$work/a"
wait_gone "$merge_id"
states=$(field "$array_id" JobState | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
[ "$(field "$array_id" JobState | sort -u)" = COMPLETED ] || fail "(a) array tasks: $states"
[ "$(field "$merge_id" JobState)" = COMPLETED ] || { merge_log "$work/a" "$merge_id" >&2; fail "(a) merge job: $(field "$merge_id" JobState)"; }
what=$(same_as_plain "$work/a" "(a)")
"$bin" sim status "$file" --profile smoke --out "$work/a" --require-complete >/dev/null ||
    fail "(a) sim status --require-complete: not complete"
say "(a) passed in $((SECONDS - t)) s: tasks $states, merge COMPLETED; $what byte for byte the plain run's"

# (b) ------------------------------------------------------------------------------------
t=$SECONDS
out="$work/b"
say "(b) cancel task 2 midway, then submit the same command again"
submit "$out"
if "$bin" sim slurm "$file" --profile smoke --tasks "$tasks" --out "$out" --submit >"$work/second.log" 2>&1; then
    fail "(b) a second array on the same folder was submitted"
fi
grep -q "still queued or running" "$work/second.log" || fail "(b) second submission: $(cat "$work/second.log")"
say "(b) a second array on the folder is refused: $(cat "$work/second.log")"
t0=$SECONDS
until [ "$(finished_units "$out" | grep -Fxc -f <(printf '%s\n' "${task2[@]}") || true)" -ge 1 ]; do
    [ $((SECONDS - t0)) -lt 120 ] || fail "(b) task 2 finished no unit in 120 s"
    sleep 0.05
done
# The running task holds its shard's lock: a second run of shard 2/3 is refused, naming it.
if "$bin" sim run "$file" --profile smoke --out "$out" --shard "2/$tasks" --threads 1 --quiet \
    >"$work/lock.log" 2>&1; then
    fail "(b) a second run of shard 2/$tasks ran beside the array's task (or the task had already ended)"
fi
grep -q "already being run here by .*Slurm job ${array_id}_2" "$work/lock.log" ||
    fail "(b) second run of shard 2/$tasks: $(cat "$work/lock.log")"
scancel "${array_id}_2"
wait_gone "${array_id}_2" 30
mapfile -t done2 < <(finished_units "$out" | grep -Fx -f <(printf '%s\n' "${task2[@]}") || true)
[ ${#done2[@]} -ge 1 ] && [ ${#done2[@]} -lt 3 ] ||
    fail "(b) task 2 was not cancelled midway: ${#done2[@]} of its 3 units finished"
say "(b) a second run of shard 2/$tasks is refused: $(cat "$work/lock.log")"
say "(b) task 2 cancelled after ${#done2[@]} of its 3 units ($(field "${array_id}_2" JobState))"
wait_gone "$merge_id"
[ "$(field "$merge_id" JobState)" = FAILED ] || fail "(b) the merge job of the cancelled array: $(field "$merge_id" JobState)"
expected=$(comm -23 <(all_units | sort) <(finished_units "$out" | sort))
listed=$(merge_log "$out" "$merge_id" | sed -n 's/^  missing: \(.*\) (unit [0-9]*, shard [0-9]*\/[0-9]*)$/\1/p' | sort)
[ -n "$expected" ] && [ "$listed" = "$expected" ] ||
    fail "(b) the merge job listed [$(echo $listed)], the missing units are [$(echo $expected)]"
[ ! -e "$out/$name/walks.parquet" ] && [ ! -e "$out/$name/passes.md" ] ||
    fail "(b) tables were written though units are missing"
say "(b) merge job FAILED ($(field "$merge_id" ExitCode)), listing exactly the missing units: $(echo $listed); no tables written"
merge_log "$out" "$merge_id" | sed 's/^/    | /'
cancelled_done=${#done2[@]}
submit "$out"
grep -q "^submitted array job $array_id (task 2 of $tasks: $((3 - cancelled_done)) unit(s) to run)" "$work/submit.log" ||
    fail "(b) the resubmission should run task 2 alone, for its $((3 - cancelled_done)) missing units"
wait_gone "$merge_id"
[ "$(field "$array_id" JobState)" = COMPLETED ] && [ "$(field "$merge_id" JobState)" = COMPLETED ] ||
    fail "(b) resubmitted task: $(field "$array_id" JobState), merge job: $(field "$merge_id" JobState)"
what=$(same_as_plain "$out" "(b)")
records=$(finished_units "$out" | wc -l)
distinct=$(finished_units "$out" | sort -u | wc -l)
[ "$records" -eq 9 ] && [ "$distinct" -eq 9 ] ||
    fail "(b) $records unit timing records for $distinct distinct units: some unit ran twice"
ran=$(grep -o '"units":[0-9]*' "$out/$name/parts/runs.jsonl" | awk -F: '{ s += $2 } END { print s + 0 }')
[ $((ran + cancelled_done)) -eq 9 ] ||
    fail "(b) the runs ran $ran units and the cancelled task $cancelled_done: not 9"
say "(b) passed in $((SECONDS - t)) s: $what byte for byte the plain run's; 9 timing records for 9 units, the runs' unit counts $ran + $cancelled_done (cancelled task) = 9: no unit ran twice"

# (c) ------------------------------------------------------------------------------------
t=$SECONDS
out="$work/c"
say "(c) every task fails after one unit (exit 137)"
submit "$out" --stop-after-units 1
wait_gone "$merge_id"
[ "$(field "$array_id" JobState | sort -u)" = FAILED ] || fail "(c) array tasks: $(field "$array_id" JobState | tr '\n' ' ')"
[ "$(field "$merge_id" JobState)" = FAILED ] || fail "(c) merge job: $(field "$merge_id" JobState)"
expected=$(comm -23 <(all_units | sort) <(finished_units "$out" | sort))
listed=$(merge_log "$out" "$merge_id" | sed -n 's/^  missing: \(.*\) (unit [0-9]*, shard [0-9]*\/[0-9]*)$/\1/p' | sort)
[ "$(echo "$expected" | wc -l)" -eq 6 ] && [ "$listed" = "$expected" ] ||
    fail "(c) the merge job listed [$(echo $listed)], the missing units are [$(echo $expected)]"
[ ! -e "$out/$name/walks.parquet" ] || fail "(c) tables were written though units are missing"
say "(c) passed in $((SECONDS - t)) s: tasks FAILED (exit codes $(field "$array_id" ExitCode | sort -u | paste -sd, -)), merge job FAILED ($(field "$merge_id" ExitCode)) listing exactly the 6 missing units"

passed=y
say "all checks passed in $((SECONDS - started)) s"
